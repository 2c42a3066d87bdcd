// docs/qa.md's Puppeteer recipe, run by e2e/tests/qa_runners.rs: the inject bundle added
// with `evaluateOnNewDocument`, one chat turn measured with `ttfx-probe/runner`, the
// batch written to $TTFX_QA_OUT. Debian's Chromium through `executablePath`; puppeteer-core
// downloads no browser. $TTFX_CHAT_URL is the page with its API and delays.
import { writeFileSync } from "node:fs";
import puppeteer from "puppeteer-core";
import { batchOf, injectSource, measureTurn } from "ttfx-probe/runner";

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = await browser.newPage();
  await page.evaluateOnNewDocument(injectSource());
  await page.goto(process.env.TTFX_CHAT_URL);
  const evaluate = (fn, arg) => page.evaluate(fn, arg);
  const runs = [];
  for (const text of ["Warm up", "Hello", "Tell me more", "And then?"]) {
    await page.type("#prompt", text);
    // The send button is disabled while a reply streams: wait until it takes a click.
    await page.waitForSelector("#send:not([disabled])");
    runs.push(await measureTurn(evaluate, () => page.click("#send")));
  }
  // The first turn warmed the tab up (docs/run.md, warm-up runs).
  writeFileSync(process.env.TTFX_QA_OUT, JSON.stringify(batchOf(runs.slice(1))));
} finally {
  await browser.close();
}
