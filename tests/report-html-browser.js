// SPDX-License-Identifier: MIT
// memstrackctl's HTML report in headless Chromium (Debian's chromium, driven by playwright-core): every
// section is there, a click on a column header sorts a table, a click on a flame graph box zooms into
// it, nothing is logged as an error, no request leaves the page, narrow screens and print get their
// layouts; a screenshot of the page is kept. Prints "ok ..." lines; exits 1 on the first failure.
//
// Usage: node report-html-browser.js PAGE.html SCREENSHOT.png [CHROMIUM]
"use strict";

const path = require("path");
const { launch, fail } = require("./headless-browser.js");

const [page_path, screenshot, executable = "/usr/bin/chromium"] = process.argv.slice(2);

function check(cond, message) {
        if (!cond)
                fail(message);
}

async function main() {
        const browser = await launch(executable);
        try {
                const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
                const page = await context.newPage();
                const url = "file://" + path.resolve(page_path);
                const requests = [], errors = [];
                page.on("request", (r) => requests.push(r.url()));
                page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") errors.push(m.text()); });
                page.on("pageerror", (e) => errors.push(String(e)));
                await page.goto(url, { waitUntil: "load" });

                // Every section, with its heading.
                for (const id of ["summary", "history", "tasks", "units", "modules", "flamegraph", "slab", "leaks", "oom"]) {
                        const heading = await page.$eval("section#" + id + " > h2", (h) => h.textContent).catch(() => null);
                        check(heading, "no section #" + id + " with a heading");
                        const link = await page.$("nav a[href='#" + id + "']");
                        check(link, "no link to #" + id + " in the navigation");
                }
                check(await page.$("#history svg.history-chart path.current"), "no current area in the history chart");
                check(await page.$("#history svg.history-chart path.peak"), "no peak line in the history chart");
                check(await page.$("#flamegraph svg[data-total-pages] g.frame"), "no flame graph frames");
                check((await page.$$("#oom-table tbody tr")).length === 1, "the OOM table does not have the one kill");
                check((await page.$$("#slab-callsites-table tbody tr")).length === 2, "the slab call sites table lacks its rows");
                console.log("ok every section is there");

                // Sorting: PID descending on the first click, ascending on the second.
                const pids = () => page.$$eval("#tasks-table tbody tr td:first-child", (tds) => tds.map((t) => t.textContent));
                check(JSON.stringify(await pids()) === JSON.stringify(["4242", "812", "815"]), "tasks not by current pages at first: " + await pids());
                await page.click("#tasks-table th:nth-child(1)");
                check(JSON.stringify(await pids()) === JSON.stringify(["4242", "815", "812"]), "PID descending after a click: " + await pids());
                check(await page.getAttribute("#tasks-table th:nth-child(1)", "aria-sort") === "descending", "no aria-sort after the click");
                await page.click("#tasks-table th:nth-child(1)");
                check(JSON.stringify(await pids()) === JSON.stringify(["812", "815", "4242"]), "PID ascending after a second click: " + await pids());
                // Text columns sort as text: units by name.
                await page.click("#units-table th:nth-child(1)");
                const units = await page.$$eval("#units-table tbody tr td:first-child", (tds) => tds.map((t) => t.textContent));
                check(units[0] === "postgresql.service" && units[units.length - 1] === "backup.service",
                      "units by name descending: " + units);
                console.log("ok tables sort by a click on a column");

                // Zoom: a click on a narrow box makes it span the graph; "Reset zoom" shows.
                const frame = await page.evaluateHandle(() => {
                        const boxes = Array.from(document.querySelectorAll("#flamegraph g.frame"));
                        return boxes.find((g) => /ext4_write_begin/.test(g.getAttribute("data-name")));
                });
                check(frame.asElement(), "no ext4_write_begin frame in the flame graph");
                const rect = await frame.asElement().$("rect");
                const span = Number(await page.getAttribute("#flamegraph svg[data-total-pages]", "data-span-px"));
                const before = Number(await rect.getAttribute("width"));
                check(before < span / 2, "the frame is already wide: " + before);
                await rect.click();
                const after = Number(await rect.getAttribute("width"));
                check(Math.abs(after - span) < 1, "the clicked frame is " + after + " px wide, not the span " + span);
                check(await page.$eval("#unzoom", (e) => getComputedStyle(e).display !== "none"), "no Reset zoom after the zoom");
                await page.click("#unzoom");
                check(Math.abs(Number(await rect.getAttribute("width")) - before) < 0.01, "Reset zoom did not restore the frame");
                console.log("ok the flame graph zooms on a click");

                await page.screenshot({ path: screenshot, fullPage: true });

                // A narrow screen: the page does not get wider than it (wide tables scroll in their box).
                await page.setViewportSize({ width: 380, height: 800 });
                const width = await page.evaluate(() => document.documentElement.scrollWidth);
                check(width <= 380, "the page is " + width + " px wide on a 380 px screen");
                // Print: no navigation bar.
                await page.emulateMedia({ media: "print" });
                check(await page.$eval("nav", (n) => getComputedStyle(n).display === "none"), "the navigation is printed");
                console.log("ok narrow screens and print");

                check(errors.length === 0, "console errors: " + JSON.stringify(errors));
                const others = requests.filter((u) => u !== url);
                check(others.length === 0, "requests left the page: " + JSON.stringify(others));
                console.log("ok no console error, no request but the page's own (" + requests.length + ")");
        } finally {
                await browser.close();
        }
}

main().catch((e) => fail(e.stack || String(e)));
