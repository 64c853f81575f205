// Screenshot of the Compare page in a real browser (playwright-core driving Debian's
// /usr/bin/chromium; nothing is downloaded):
//
//   node app/e2e/compare.js '{"url": "http://127.0.0.1:8765/compare?run=hotpotqa-dev&methods=llm,rag,metakgrag",
//     "out": "docs/screenshots/compare.png"}'
//
// Waits for the methods table, the scatter and the first question's answer cards, fails on
// an exception shown by the app, and prints a JSON line with the seconds each took.
'use strict';
const { chromium } = require('playwright-core');

const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync'];
const cfg = JSON.parse(process.argv[2]);

(async () => {
  const browser = await chromium.launch({ executablePath: cfg.chromium || '/usr/bin/chromium',
    args: CHROMIUM_FLAGS });
  const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
  const t0 = Date.now();
  await page.goto(cfg.url);
  await page.getByRole('heading', { name: 'Compare methods', level: 1 }).waitFor({ timeout: 120_000 });
  await page.locator('[data-testid="stDataFrame"]').first().waitFor({ timeout: 180_000 });
  const table = (Date.now() - t0) / 1000;
  await page.locator('[data-testid="stImage"] img').first().waitFor({ timeout: 180_000 });
  await page.getByText(/^Evidence: /).first().waitFor({ timeout: 180_000 });
  const cards = (Date.now() - t0) / 1000;
  const errors = await page.locator('[data-testid="stException"]').allInnerTexts();
  if (errors.length) throw new Error(`the app raised\n${errors.join('\n').slice(0, 2000)}`);
  await page.waitForTimeout(1500);
  const height = await page.evaluate(() => {
    const main = document.querySelector('[data-testid="stMain"]');
    return main ? main.scrollHeight : document.body.scrollHeight;
  });
  await page.setViewportSize({ width: 1500, height: Math.min(Math.max(height, 1000), cfg.maxHeight || 2600) });
  await page.waitForTimeout(1000);
  await page.screenshot({ path: cfg.out });
  await browser.close();
  console.log(JSON.stringify({ out: cfg.out, table_s: table, cards_s: cards }));
})().catch((e) => { console.error(e); process.exit(1); });
