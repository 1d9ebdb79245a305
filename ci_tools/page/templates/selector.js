// The selector page's script: it reads the selection (or the URL's query), finds the answer
// `ci-tools detect --json` gives for the same facts in the embedded table, and shows it. It
// decides nothing itself: every answer was computed by detect when the page was made. Values
// from the query or a text box are only ever set as text (textContent), never as markup.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ci-tools-data").textContent);
  var el = function (id) { return document.getElementById(id); };
  var DARWIN = "aarch64-darwin";
  var pattern = function (source) { return new RegExp("^(?:" + source + ")$"); };
  var PATTERNS = {
    cc: pattern(data.patterns.capability),
    flag: pattern(data.patterns.flag),
    driver: pattern(data.patterns.driver)
  };
  var state = null;
  var messages = [];

  // ---- the facts a selection stands for -------------------------------------------------
  function machine(id) { return data.machines.find(function (m) { return m.id === id; }); }
  function branch(name) { return data.branches.find(function (b) { return b.name === name; }); }
  function isDarwin(st) { return machine(st.machine).platform === DARWIN; }
  function gpuOf(sm) { return data.gpus.find(function (g) { return g.sm === sm; }); }
  function version(text) { return text.split(".").map(Number); }
  function compare(a, b) {
    var x = version(a), y = version(b);
    for (var i = 0; i < Math.max(x.length, y.length); i++) {
      var d = (x[i] || 0) - (y[i] || 0);
      if (d) { return d; }
    }
    return 0;
  }

  // The ISAs of the machine whose cpuinfo flags are all present: the CPU's fit set.
  function fitKey(machineId, flags) {
    var have = new Set(flags);
    var names = data.isas[machineId].filter(function (isa) {
      return isa.cpuinfo.every(function (f) { return have.has(f); });
    }).map(function (isa) { return isa.name; }).sort();
    return names.length ? names.join("+") : "none";
  }

  function cpuFlags(st) {
    if (st.flags) { return st.flags; }
    return data.fit_sets[st.machine][st.cpu].flags;
  }

  // "none", an SM of the catalog, or the class of a capability the catalog does not know.
  function gpuKey(st) {
    if (st.gpu === "none" || st.gpu.indexOf("cc:") !== 0) { return st.gpu; }
    var cc = st.gpu.slice(3), known = data.known_cc;
    if (compare(cc, known[0]) < 0) { return "cc-older"; }
    if (compare(cc, known[known.length - 1]) > 0) { return "cc-newer"; }
    return "cc-between";
  }

  function capability(st) {
    if (st.gpu === "none") { return null; }
    return st.gpu.indexOf("cc:") === 0 ? st.gpu.slice(3) : gpuOf(st.gpu).capability;
  }

  function driverClass(driver) {
    if (!driver) { return 0; }
    var major = Number(driver.split(".")[0]);
    return 1 + data.driver_thresholds.filter(function (t) { return major >= t; }).length;
  }

  // The facts `ci-tools detect` would be given for this selection.
  function factsOf(st) {
    if (isDarwin(st)) { return { machine: st.machine, gpu_cc: null, cpu_flags: null, driver: null }; }
    var cc = capability(st);
    return {
      machine: st.machine,
      gpu_cc: cc,
      cpu_flags: cpuFlags(st),
      driver: cc && st.driver ? st.driver : null
    };
  }

  // ---- the answer: a lookup in the table, then the values the table holds markers for ----
  function resolve(value, swaps) {
    if (typeof value === "string") {
      return swaps.reduce(function (text, swap) { return text.split(swap[0]).join(swap[1]); }, value);
    }
    if (Array.isArray(value)) { return value.map(function (v) { return resolve(v, swaps); }); }
    if (value && typeof value === "object") {
      if (typeof value.$v === "string") { return resolve(data.variants[value.$v], swaps); }
      var out = {};
      Object.keys(value).forEach(function (k) { out[k] = resolve(value[k], swaps); });
      return out;
    }
    return value;
  }

  function lookup(st) {
    var facts = factsOf(st);
    var rows = data.table[[st.branch, st.python, st.workload, st.machine].join("|")];
    var index;
    if (isDarwin(st)) {
      index = rows["-"]["-"];
    } else {
      var cell = rows[gpuKey(st)][fitKey(st.machine, facts.cpu_flags)];
      index = Array.isArray(cell) ? cell[driverClass(facts.driver)] : cell;
    }
    var swaps = [];
    if (facts.gpu_cc) { swaps.push([data.markers.cc, facts.gpu_cc]); }
    if (facts.driver) { swaps.push([data.markers.driver, facts.driver]); }
    var answer = resolve(data.answers[index], swaps);
    return Object.assign({
      branch: st.branch,
      package: data.package,
      python: st.python,
      workload: st.workload,
      machine: st.machine,
      platform: machine(st.machine).platform,
      driver: facts.driver
    }, answer);
  }

  // ---- reading a query: a deep link, or a script's facts ----------------------------------
  function defaults() {
    var b = data.branches[0];
    var st = { branch: b.name, python: b.pythons[b.pythons.length - 1], workload: data.workloads[0].id,
      machine: data.machines[0].id, gpu: "none", cpu: null, flags: null, driver: "" };
    st.cpu = defaultCpu(st.machine);
    return st;
  }

  function defaultCpu(machineId) { return data.cpu_default[machineId]; }

  // A table's own entry for a key from the query or a text box, never one of its prototype's
  // (`constructor`, `__proto__`, `hasOwnProperty`): undefined where it has none.
  function own(table, key) {
    return Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined;
  }

  function say(text) { messages.push(text); }
  function quoted(text) { return "\u201c" + String(text).slice(0, 80) + "\u201d"; }

  function fromQuery(query) {
    var st = defaults();
    var params = new URLSearchParams(query);
    var take = function (name) { var v = params.get(name); return v === null ? null : v.trim(); };
    var b = take("branch");
    if (b !== null) { if (branch(b)) { st.branch = b; } else { say("branch: " + quoted(b) + " is not a branch of this page; known: " + data.branches.map(function (x) { return x.name; }).join(", ")); } }
    var pythons = branch(st.branch).pythons;
    st.python = pythons[pythons.length - 1];
    var py = take("python");
    if (py !== null) { if (pythons.indexOf(py) >= 0) { st.python = py; } else { say("python: " + quoted(py) + " is not built on " + st.branch + "; it builds " + pythons.join(", ")); } }
    var w = take("workload");
    if (w !== null) { if (data.workloads.some(function (x) { return x.id === w; })) { st.workload = w; } else { say("workload: " + quoted(w) + " is not one of " + data.workloads.map(function (x) { return x.id; }).join(", ")); } }
    readMachine(st, take("arch") !== null ? take("arch") : take("machine"));
    readGpu(st, take("gpu"), take("cc"));
    readCpu(st, take("cpu"), take("flags"));
    var d = take("driver");
    if (d !== null && d !== "") { if (PATTERNS.driver.test(d)) { st.driver = d; } else { say("driver: " + quoted(d) + " is not an NVIDIA driver version; use what nvidia-smi prints (e.g. 580.65.06)"); } }
    return st;
  }

  function readMachine(st, value) {
    if (value === null) { return; }
    var id = own(data.aliases, value) || value;
    if (machine(id)) { st.machine = id; st.cpu = defaultCpu(id); return; }
    say("arch: " + quoted(value) + " is not a machine this page knows; use one of " + data.machines.map(function (m) { return m.id; }).concat(Object.keys(data.aliases)).join(", "));
  }

  function readGpu(st, gpu, cc) {
    if (cc !== null) {
      if (cc === "none") { st.gpu = "none"; return; }
      if (!PATTERNS.cc.test(cc)) { say("cc: " + quoted(cc) + " is not a compute capability; use X.Y as nvidia-smi prints it (e.g. 9.0, 12.1)"); return; }
      var known = data.gpus.find(function (g) { return g.capability === cc; });
      st.gpu = known ? known.sm : "cc:" + cc;
      return;
    }
    if (gpu === null) { return; }
    if (gpu === "none" || gpuOf(gpu)) { st.gpu = gpu; return; }
    say("gpu: " + quoted(gpu) + " is not a GPU this page knows; use none or one of " + data.gpus.map(function (g) { return g.sm; }).join(", "));
  }

  function readCpu(st, cpu, flags) {
    if (flags !== null) {
      var list = flags.replace(/^\s*(flags|features)\s*:/i, "").split(/[\s,]+/).filter(Boolean);
      var bad = list.filter(function (f) { return !PATTERNS.flag.test(f); });
      if (bad.length || !list.length) {
        say("flags: " + (bad.length ? quoted(bad[0]) + " is not a cpuinfo flag" : "no flags given") + "; give lowercase /proc/cpuinfo flags, comma or space separated");
      } else {
        st.flags = list;
        st.cpu = fitKey(st.machine, list);
        return;
      }
    }
    if (cpu === null) { return; }
    if (own(data.fit_sets[st.machine], cpu)) { st.cpu = cpu; return; }
    say("cpu: " + quoted(cpu) + " is not a CPU of " + st.machine + "; use one of " + data.cpu_classes[st.machine].map(function (c) { return c.key; }).join(", "));
  }

  function toQuery(st) {
    var p = new URLSearchParams();
    p.set("branch", st.branch); p.set("python", st.python); p.set("workload", st.workload);
    p.set("arch", st.machine);
    if (!isDarwin(st)) {
      if (st.gpu.indexOf("cc:") === 0) { p.set("cc", st.gpu.slice(3)); } else { p.set("gpu", st.gpu); }
      if (st.flags) { p.set("flags", st.flags.join(",")); } else { p.set("cpu", st.cpu); }
      if (st.driver && st.gpu !== "none") { p.set("driver", st.driver); }
    }
    return p.toString();
  }

  // ---- the form ------------------------------------------------------------------------
  // An option that leads nowhere is dimmed, named so (`short`), and says why when chosen.
  function option(select, value, label, why, short) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = why ? label + " \u2014 " + (short || why) : label;
    if (why) { o.className = "dim"; o.dataset.why = why; }
    select.appendChild(o);
  }

  function explain(select) {
    var note = el(select.id + "-why");
    var chosen = select.options[select.selectedIndex];
    note.textContent = chosen && chosen.dataset.why ? "Not built: " + chosen.dataset.why : "";
  }

  function dimFor(st, b, m, sm) {
    var byMachine = data.dims[b] && data.dims[b][m];
    return byMachine && byMachine[sm] ? byMachine[sm] : "";
  }

  function fillForm(st) {
    var gpu = el("gpu"); gpu.textContent = "";
    option(gpu, "none", "No NVIDIA GPU");
    data.gpus.forEach(function (g) {
      var group = document.createElement("optgroup");
      group.label = g.family + " (" + g.sm + ", compute capability " + g.capability + ")";
      gpu.appendChild(group);
      g.hardware.forEach(function (name) { option(group, g.sm, name + " (" + g.sm + ")", dimFor(st, st.branch, st.machine, g.sm), "not on " + st.branch); });
    });
    if (st.gpu.indexOf("cc:") === 0) { option(gpu, st.gpu, "compute capability " + st.gpu.slice(3), "the catalog knows no GPU of this capability", "unknown"); }
    gpu.value = st.gpu;
    var known = st.gpu !== "none" && gpuOf(st.gpu);
    var mach = el("machine"); mach.textContent = "";
    data.machines.forEach(function (m) {
      var nowhere = known && data.branches.every(function (b) { return dimFor(st, b.name, m.id, st.gpu); });
      option(mach, m.id, m.label, nowhere ? dimFor(st, st.branch, m.id, st.gpu) : "", "no " + st.gpu + " build");
    });
    mach.value = st.machine;
    fillCpu(st);
    var br = el("branch"); br.textContent = "";
    data.branches.forEach(function (b) {
      option(br, b.name, b.label, known ? dimFor(st, b.name, st.machine, st.gpu) : "", "no " + st.gpu + " build");
    });
    br.value = st.branch;
    [gpu, mach, br].forEach(explain);
    var py = el("python"); py.textContent = "";
    branch(st.branch).pythons.forEach(function (v) { option(py, v, "Python " + v); });
    py.value = st.python;
    var wl = el("workload"); wl.textContent = "";
    data.workloads.forEach(function (w) { option(wl, w.id, w.label); });
    wl.value = st.workload;
    el("flags").value = st.flags ? st.flags.join(" ") : "";
    el("cc").value = st.gpu === "none" ? "" : capability(st);
    el("driver").value = st.driver || "";
    gpu.disabled = el("cc").disabled = el("driver").disabled = el("cpu").disabled = el("flags").disabled = isDarwin(st);
  }

  function fillCpu(st) {
    var cpu = el("cpu"); cpu.textContent = "";
    if (isDarwin(st)) { option(cpu, "none", "Apple Silicon"); cpu.value = "none"; return; }
    var named = data.cpu_classes[st.machine];
    named.forEach(function (c) { option(cpu, c.key, c.label); });
    if (!named.some(function (c) { return c.key === st.cpu; })) {
      option(cpu, st.cpu, "from your flags: " + data.fit_sets[st.machine][st.cpu].label);
    }
    cpu.value = st.cpu;
  }

  function readForm() {
    var st = Object.assign({}, state);
    st.branch = el("branch").value;
    var pythons = branch(st.branch).pythons;
    st.python = pythons.indexOf(el("python").value) >= 0 ? el("python").value : pythons[pythons.length - 1];
    st.workload = el("workload").value;
    if (el("machine").value !== st.machine) { st.machine = el("machine").value; st.cpu = defaultCpu(st.machine); st.flags = null; }
    st.gpu = el("gpu").value;
    return st;
  }

  // ---- showing the answer --------------------------------------------------------------
  function node(tag, text, className) {
    var n = document.createElement(tag);
    if (text !== undefined && text !== null) { n.textContent = text; }
    if (className) { n.className = className; }
    return n;
  }

  function commands(lines, className) {
    var box = node("div", null, "commands");
    var text = node("div", null, "lines");
    lines.forEach(function (line) { text.appendChild(node("code", line, className)); });
    var copy = node("button", "copy", "copy");
    copy.type = "button";
    copy.setAttribute("aria-label", "copy " + (lines.length > 1 ? "these commands" : "this command"));
    copy.addEventListener("click", function () {
      if (navigator.clipboard) { navigator.clipboard.writeText(lines.join("\n")).catch(function () {}); }
    });
    box.appendChild(text);
    box.appendChild(copy);
    return box;
  }

  function sizeText(bytes) {
    if (typeof bytes !== "number") { return "\u2014"; }
    var units = ["bytes", "KiB", "MiB", "GiB"], i = 0, n = bytes;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + " " + units[i];
  }

  function describe(list, label, value) {
    list.appendChild(node("dt", label));
    list.appendChild(node("dd", value));
  }

  function variantBlock(v, answer) {
    var box = node("div");
    var list = node("dl");
    // A fact the repository does not state is null: said in words, never "null" or ">= 0".
    describe(list, "Versions", Object.keys(v.versions).map(function (k) { return k + " " + (v.versions[k] === null ? "version unknown" : v.versions[k]); }).join(", ") + ", Python " + v.python);
    describe(list, "CUDA", v.cuda || "none (CPU or Apple Metal)");
    var yours = answer.driver ? " (yours: " + answer.driver + ")" : " \u2014 check with nvidia-smi";
    if (v.min_driver !== null) {
      describe(list, "NVIDIA driver", ">= " + v.min_driver + yours);
    } else if (v.cuda) {
      describe(list, "NVIDIA driver", "one for CUDA " + v.cuda + "; its least version unknown" + yours);
    }
    var record = data.records[v.branch + "/" + v.package];
    if (record) {
      var s = record.sizes;
      describe(list, "Size", "libtorch_cuda*.so " + sizeText(s.cuda_libraries) + " \u00b7 torch package " + sizeText(s.torch_package) + " \u00b7 closure " + sizeText(s.closure));
      describe(list, "Proven", record.proven + (record.date ? " (" + record.date + (record.commit ? ", " + record.commit : "") + ")" : ""));
      if (record.org) { describe(list, "Published to", record.org); }
    } else {
      describe(list, "Size", "not measured yet: no release record of this variant");
    }
    box.appendChild(list);
    box.appendChild(node("h3", "Install"));
    installBlock(box, v);
    box.appendChild(node("h3", "Check it"));
    box.appendChild(commands([v.verify], "verify"));
    box.appendChild(node("p", "It prints: " + v.expect, "expect"));
    return box;
  }

  // With release records, only what a release published gets an install line: another would
  // fail. The rest say so and name the nearest published build (published.py chose it).
  function isPublished(branchName, name) {
    var record = own(data.records, branchName + "/" + name);
    return Boolean(record && record.org);
  }

  function installBlock(box, v) {
    var pub = data.publication;
    if (!pub) { box.appendChild(commands(v.installs, "install")); return; }
    // Each line names the org the release published it to.
    var lines = v.installs.map(function (line) { return line.split("/").pop(); })
      .filter(function (name) { return isPublished(v.branch, name); })
      .map(function (name) { return "flox install " + own(data.records, v.branch + "/" + name).org + "/" + name; });
    if (isPublished(v.branch, v.package)) { box.appendChild(commands(lines, "install")); return; }
    box.appendChild(node("p", "Not published yet: no release of " + v.branch + " has published " + v.package + ".", "unpublished"));
    var near = own(pub.nearest, v.branch + "/" + v.package);
    if (!near) { box.appendChild(node("p", "No build near it is published yet.", "unpublished")); return; }
    var parts = near.split("/"), nearBranch = parts[0], nearName = parts.slice(1).join("/");
    box.appendChild(node("p", "The nearest published build (the same GPU target, an instruction set no higher): " + nearName + " (" + nearBranch + "):", "nearest-published"));
    box.appendChild(commands(["flox install " + own(data.records, near).org + "/" + nearName], "install"));
  }

  function show(answer) {
    var out = el("answer");
    out.textContent = "";
    answer.recommendations.forEach(function (rec) {
      var best = rec.best;
      var head = rec.package
        ? node("h2", rec.package, "verdict-fits")
        : node("h2", "No " + answer.package + " build on " + answer.branch + " fits this machine", "verdict-none");
      head.dataset.package = rec.package || "";
      out.appendChild(head);
      out.appendChild(node("p", rec.reason, "reason"));
      if (best && !rec.package) {
        out.appendChild(node("p", "The nearest that fits: " + best.package + " on " + best.branch + ".", "nearest"));
      }
      if (best) {
        out.appendChild(variantBlock(best, answer));
      } else if (rec.fallback) {
        out.appendChild(node("p", "Nothing on any branch uses this GPU here. The CPU-only build runs without it:"));
        installBlock(out, rec.fallback);
      } else {
        out.appendChild(node("p", "No build of any branch fits this machine."));
      }
      if (rec.alternatives.length > (rec.package ? 0 : 1)) {
        var others = rec.alternatives.slice(rec.package ? 0 : 1).map(function (a) { return a.package + " (" + a.branch + ")"; });
        out.appendChild(node("p", "Also on other branches: " + others.join(", ") + "."));
      }
    });
    out.appendChild(node("h3", "The same answer in a terminal"));
    out.appendChild(commands([detectCommand(answer)], "detect"));
    var link = node("a", "Link to this selection");
    link.href = "?" + toQuery(state);
    out.appendChild(link);
  }

  function detectCommand(answer) {
    var f = factsOf(state);
    var parts = ["ci-tools detect --branch " + answer.branch, "--python " + answer.python, "--workload " + answer.workload, "--machine " + answer.machine];
    if (f.cpu_flags) { parts.push("--gpu-cc " + (f.gpu_cc || "none"), "--cpu-flags " + f.cpu_flags.join(",")); }
    if (f.driver) { parts.push("--driver " + f.driver); }
    return parts.join(" ");
  }

  function showMessages() {
    var box = el("messages");
    box.textContent = "";
    messages.forEach(function (m) { box.appendChild(node("p", m)); });
  }

  function update(st) {
    state = st;
    fillForm(st);
    var answer = lookup(st);
    show(answer);
    showMessages();
    try { history.replaceState(null, "", "?" + toQuery(st)); } catch (e) { /* file:// may refuse */ }
    return answer;
  }

  function listen() {
    ["gpu", "machine", "branch", "python", "workload"].forEach(function (id) {
      el(id).addEventListener("change", function () { messages = []; update(readForm()); });
    });
    el("cpu").addEventListener("change", function () {
      messages = []; var st = readForm(); st.cpu = el("cpu").value; st.flags = null; update(st);
    });
    el("flags").addEventListener("change", function () {
      messages = []; var st = readForm(); var text = el("flags").value.trim();
      if (text) { readCpu(st, null, text); } else { st.flags = null; st.cpu = defaultCpu(st.machine); }
      update(st);
    });
    el("cc").addEventListener("change", function () {
      messages = []; var st = readForm(); var text = el("cc").value.trim();
      readGpu(st, null, text === "" ? "none" : text);
      update(st);
    });
    el("driver").addEventListener("change", function () {
      messages = []; var st = readForm(); var text = el("driver").value.trim();
      if (text === "" || PATTERNS.driver.test(text)) { st.driver = text; } else { st.driver = ""; say("driver: " + quoted(text) + " is not an NVIDIA driver version; use what nvidia-smi prints (e.g. 580.65.06)"); }
      update(st);
    });
  }

  // A script (or a test) asks with a query string and gets detect's answer and what was shown.
  function apply(query) {
    messages = [];
    var answer = update(fromQuery(query));
    return {
      answer: answer,
      facts: factsOf(state),
      messages: messages.slice(),
      shown: {
        packages: Array.prototype.map.call(document.querySelectorAll("#answer h2"), function (h) { return h.dataset.package; }),
        installs: Array.prototype.map.call(document.querySelectorAll("#answer code.install"), function (c) { return c.textContent; })
      },
      query: toQuery(state)
    };
  }

  function start() {
    el("noscript-note").hidden = true;
    el("choices").hidden = false;
    el("every").open = false; // the selector answers; the full table stays one click away
    listen();
    try {
      apply(window.location.search);
    } catch (e) {
      messages = ["the selection could not be read (" + String(e && e.message).slice(0, 120) + "); showing the defaults"];
      update(defaults());
    }
  }

  window.ciToolsSelector = { apply: apply, data: data };
  start();
}());
