// Render time of every explorer page in a real browser (playwright-core driving Debian's
// /usr/bin/chromium; nothing is downloaded). Called by tests/e2e/test_page_times.py:
//
//   node app/e2e/pages.js '{"url": "http://127.0.0.1:8765", "domains": ["medical", "legal"],
//     "out": "test-output/e2e-pages"}'
//
// A page's render time runs from the click that opens it (or the domain picked on the
// Graphs page) until its last section is on screen and Streamlit's script run has ended
// (its status widget shows no "Running..."). Ask is timed from the first page load. The
// Graphs page is timed once per domain: its sizes table, the domain's quality report and
// its build jobs. With "warmup": true the app is first opened once in another browser
// context (the first visit after the server started, reported as first_visit_ms apart
// from `ms`); the walk then runs as a new user of a running server. The last stdout line is a JSON report (milliseconds per page);
// failures exit non-zero.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync'];
const cfg = JSON.parse(process.argv[2]);
const report = { ms: {}, screenshots: [] };
const TIMEOUT = cfg.timeoutMs || 120_000;  // a page slower than this fails outright

async function settled(page) {
  // The script run has ended: no "Running..." status widget for 400 ms in a row (the
  // widget appears a moment after a run starts, so one empty look is not enough). Checked
  // inside the page every 25 ms; returns the time the quiet stretch began.
  const quietSince = await page.evaluate(async (timeout) => {
    const busy = () => [...document.querySelectorAll('[data-testid="stStatusWidget"]')]
      .some(e => /Running/.test(e.textContent));
    const deadline = Date.now() + timeout;
    let since = busy() ? null : Date.now();
    while (since === null || Date.now() - since < 400) {
      if (Date.now() > deadline) throw new Error('the app kept running');
      await new Promise(r => setTimeout(r, 25));
      if (busy()) since = null; else if (since === null) since = Date.now();
    }
    return since;
  }, TIMEOUT);
  return quietSince;
}

async function exceptions(page, where) {
  const texts = await page.locator('[data-testid="stException"]').allInnerTexts();
  if (texts.length) throw new Error(`${where}: the app raised\n${texts.join('\n').slice(0, 2000)}`);
}

async function shot(page, name) {
  const file = path.join(cfg.out, `${name}.png`);
  await page.screenshot({ path: file });
  report.screenshots.push(file);
}

async function timed(page, name, open, markers) {
  const t0 = Date.now();
  await open();
  for (const m of markers) await m.first().waitFor({ timeout: TIMEOUT });
  report.ms[name] = (await settled(page)) - t0;
  await exceptions(page, name);
  await shot(page, name.replace(/[^A-Za-z0-9_-]/g, '_'));
}

const heading = (page, title) => page.getByRole('heading', { name: title, level: 1 });
const nav = (page, title) => () =>
  page.locator('[data-testid="stSidebarNav"]').getByText(title, { exact: true }).click();

async function chooseDomain(page, domain) {
  const box = page.getByRole('combobox', { name: 'Domain', exact: true });
  await box.click();
  await box.fill(domain);
  await page.getByRole('option', { name: domain, exact: true }).first().click();
}

async function walk(page) {
  await timed(page, 'Ask', () => page.goto(cfg.url),
    [heading(page, 'Ask'), page.getByRole('button', { name: 'Ask', exact: true })]);
  await timed(page, 'Reasoning', nav(page, 'Reasoning'), [heading(page, 'Reasoning')]);
  await timed(page, 'Results', nav(page, 'Results'), [heading(page, 'Results'),
    page.getByText(/questions × [0-9]+ methods|No runs yet/)]);
  await timed(page, 'Compare', nav(page, 'Compare'), [heading(page, 'Compare methods'),
    page.locator('[data-testid="stDataFrame"]').or(page.getByText(/^No runs in/))]);
  const domains = cfg.domains || [];
  for (const [i, domain] of domains.entries()) {
    const open = i === 0 ? async () => {
      await nav(page, 'Graphs')();
      await heading(page, 'Graphs').waitFor({ timeout: TIMEOUT });
      // the page opens on the first domain of the list; pick ours if it is another
      if (!(await page.getByRole('heading', { name: `Quality of ${domain}` }).count())) {
        await chooseDomain(page, domain);
      }
    } : () => chooseDomain(page, domain);
    await timed(page, `Graphs ${domain}`, open, [
      page.getByRole('heading', { name: `Quality of ${domain}` }),
      page.getByText('connected components'),
      page.getByRole('heading', { name: 'Build jobs' })]);
  }
}

(async () => {
  fs.mkdirSync(cfg.out, { recursive: true });
  const browser = await chromium.launch({ executablePath: cfg.chromium || '/usr/bin/chromium',
    args: CHROMIUM_FLAGS });
  let page = null;
  try {
    if (cfg.warmup) {
      const first = await browser.newContext();
      const p0 = await first.newPage();
      const t0 = Date.now();
      await p0.goto(cfg.url);
      await p0.getByRole('button', { name: 'Ask', exact: true }).waitFor({ timeout: TIMEOUT });
      report.first_visit_ms = (await settled(p0)) - t0;
      await first.close();
    }
    page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    await walk(page);
  } catch (e) {
    if (page) await page.screenshot({ path: path.join(cfg.out, 'failure.png') }).catch(() => {});
    console.error(e.stack || String(e));
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(report));
})();
