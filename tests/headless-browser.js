// SPDX-License-Identifier: MIT
// Headless Chromium for the browser tests (Debian's chromium, driven by playwright-core): what a root VM
// without a GPU needs, and nothing that would reach out on its own (playwright gives the browser a new empty
// profile of its own).
"use strict";

const { chromium } = require("playwright-core");

function launch(executable) {
        return chromium.launch({
                executablePath: executable,
                args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                       "--disable-background-networking", "--disable-component-update", "--disable-sync",
                       "--disable-default-apps", "--disable-extensions"],
        });
}

function fail(message) {
        console.error("FAIL: " + message);
        process.exit(1);
}

module.exports = { launch, fail };
