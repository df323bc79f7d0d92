// SPDX-License-Identifier: MIT
// A recorded heap's chart in memstrackctl's HTML report, in headless Chromium (Debian's chromium, driven by
// playwright-core): a click on the chart at each moment given shows the call sites live then, the one
// expected first and the others' expected sites absent; nothing is logged as an error, no request leaves
// the page. Prints "ok ..." lines; exits 1 on the first failure.
//
// Usage: node heap-moment-browser.js PAGE.html CHROMIUM SECONDS SITE [SECONDS SITE...]
"use strict";

const path = require("path");
const { launch, fail } = require("./headless-browser.js");

const [page_path, executable, ...moments] = process.argv.slice(2);

async function main() {
        const browser = await launch(executable);
        try {
                const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
                const requests = [], errors = [];
                page.on("request", (r) => requests.push(r.url()));
                page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") errors.push(m.text()); });
                page.on("pageerror", (e) => errors.push(String(e)));
                const url = "file://" + path.resolve(page_path);
                await page.goto(url, { waitUntil: "load" });

                const box = await page.$("div.heap-moment");
                if (!box)
                        fail("no chart of a heap's moments in the page");
                const data = JSON.parse(await box.$eval("script", (s) => s.textContent));
                const svg = await box.$("svg.heap-chart");
                await svg.scrollIntoViewIfNeeded();
                const bounds = await svg.boundingBox();
                const sites = [];
                for (let i = 0; i + 1 < moments.length; i += 2)
                        sites.push(moments[i + 1]);
                for (let i = 0; i + 1 < moments.length; i += 2) {
                        const usec = Number(moments[i]) * 1e6, want = moments[i + 1];
                        const x = bounds.x + usec / data.lifeUsec * bounds.width;
                        await page.mouse.click(x, bounds.y + bounds.height / 2);
                        const rows = await box.$$eval("tbody tr td.frames", (tds) => tds.map((t) => t.textContent));
                        const ours = rows.filter((r) => sites.some((s) => r.startsWith(s)));
                        if (ours.length !== 1 || !ours[0].startsWith(want))
                                fail(`at ${moments[i]} s the call sites live are ${JSON.stringify(rows)}, expected ${want} alone of ${sites}`);
                        const caption = await box.$eval(".moment", (p) => p.textContent);
                        if (!caption.startsWith("Call sites live at "))
                                fail("no caption of the moment: " + caption);
                        console.log(`ok at ${moments[i]} s: ${ours[0]} (${caption})`);
                }
                if (errors.length)
                        fail("errors in the console: " + errors.join("; "));
                const outside = requests.filter((r) => r !== url);
                if (outside.length)
                        fail("requests beyond the page: " + outside.join(" "));
        } finally {
                await browser.close();
        }
}

main().catch((e) => fail(String(e && e.stack || e)));
