// End-to-end walk through the kgrag explorer with a real browser (playwright-core driving
// Debian's /usr/bin/chromium; nothing is downloaded). Called by tests/e2e/test_app_e2e.py:
//
//   node app/e2e/explore.js '{"url": "http://127.0.0.1:8765", "domain": "test-…",
//     "question": "…", "methods": ["llm", "metakgrag"], "run": "synthetic-300",
//     "out": "test-output/e2e", "browserPassword": "…"}'
//
// It asks the question, measures the time from pressing Ask to the first visible progress,
// waits for every method's answer, opens the Reasoning, Graphs and Results pages (timing
// the Results page for the named run), opens one "Open in Neo4j Browser" link, and saves a
// screenshot per page. The last stdout line is a JSON report; failures exit non-zero.
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

// Without the background-networking flags Chromium keeps trying Google's hosts, which this
// closed network refuses. playwright gives every launch a fresh, empty --user-data-dir.
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync'];
const cfg = JSON.parse(process.argv[2]);
const report = { pages: {}, screenshots: [] };

async function shot(page, name) {
  // Streamlit scrolls inside its main container, so grow the viewport to the content.
  const file = path.join(cfg.out, `${name}.png`);
  const size = page.viewportSize();
  const height = await page.evaluate(() => {
    const main = document.querySelector('[data-testid="stMain"]');
    return main ? main.scrollHeight : document.body.scrollHeight;
  });
  await page.setViewportSize({ width: size.width, height: Math.min(Math.max(height, size.height), 5000) });
  await page.waitForTimeout(800);
  await page.screenshot({ path: file });
  await page.setViewportSize(size);
  report.screenshots.push(file);
}

async function exceptions(page, where) {
  const texts = await page.locator('[data-testid="stException"]').allInnerTexts();
  if (texts.length) throw new Error(`${where}: the app raised\n${texts.join('\n').slice(0, 2000)}`);
}

async function choose(page, label, value, exact = true) {
  // Streamlit selectbox / multiselect: focus the combobox by its label, filter, pick.
  const box = page.getByRole('combobox', { name: label, exact: true });
  await box.click();
  await box.fill(value);
  await page.getByRole('option', { name: value, exact }).first().click();
  await page.keyboard.press('Escape');
}

async function idle(page) {
  // Wait until Streamlit has finished the script run a click started: its status widget
  // says "Running..." while a run is under way.
  await page.waitForTimeout(300);
  await page.locator('[data-testid="stStatusWidget"]', { hasText: /Running/ })
    .waitFor({ state: 'detached', timeout: 60_000 }).catch(() => {});
}

async function gotoPage(page, title) {
  await page.locator('[data-testid="stSidebarNav"]').getByText(title, { exact: true }).click();
  await page.getByRole('heading', { name: title, level: 1 }).waitFor({ timeout: 60_000 });
}

async function ask(page) {
  await page.goto(cfg.url);
  await page.getByRole('heading', { name: 'Ask', level: 1 }).waitFor({ timeout: 60_000 });
  await choose(page, 'Domain graph (for the KG methods)', cfg.domain);
  for (const m of cfg.methods.filter(m => m !== 'llm')) await choose(page, 'Methods', m);
  await page.getByLabel('Your question').fill(cfg.question);
  await page.getByLabel('Your question').press('Tab');  // commit the text area
  const t0 = Date.now();
  await page.getByRole('button', { name: 'Ask', exact: true }).click();
  await page.locator('[data-testid="stExpander"]', { hasText: 'answering' })
    .or(page.getByText(/is answering|Answering with/)).first().waitFor({ timeout: 60_000 });
  report.ask_to_progress_ms = Date.now() - t0;
  await page.getByText(/Answered in [0-9.]+ s/).waitFor({ timeout: cfg.answerTimeoutMs || 600_000 });
  report.ask_to_answer_ms = Date.now() - t0;
  await exceptions(page, 'Ask');
  report.answers = {};
  for (const m of cfg.methods) {
    const card = page.locator(`.st-key-answer_${m}`);
    await card.getByText(/LLM call|failed|not reachable|answers from/).first()
      .waitFor({ timeout: 60_000 });
    report.answers[m] = (await card.innerText()).slice(0, 600);
  }
  await shot(page, '1-ask');
}

async function reasoning(page) {
  await gotoPage(page, 'Reasoning');
  if (cfg.methods.includes('metakgrag')) {
    await page.getByRole('radiogroup').getByText('metakgrag', { exact: true }).click();
    await page.getByText('Paths per start entity').waitFor({ timeout: 30_000 }).catch(() => {});
    await page.locator('[data-testid="stGraphVizChart"] svg').first()
      .waitFor({ timeout: 30_000 }).catch(() => {});
    report.path_graph = await page.locator('[data-testid="stGraphVizChart"] svg').count();
    report.browser_links = await page.getByRole('link', { name: /Open in Neo4j Browser/ }).count();
    const cycle = page.getByRole('radio', { name: 'cycle 1', exact: true }).first();
    if (await cycle.count()) {  // show a cycle's diagnosis and coverage chart
      await cycle.click();
      await page.getByText(/Coverage per concept/).first().waitFor({ timeout: 30_000 });
      await page.locator('[data-testid="stGraphVizChart"] svg').first().waitFor();
      report.cycle_view = true;
    }
  }
  await page.waitForTimeout(1500);  // let graphviz and vega finish drawing
  await exceptions(page, 'Reasoning');
  await shot(page, '2-reasoning');
}

async function graphs(page) {
  await gotoPage(page, 'Graphs');
  await choose(page, 'Domain', cfg.domain);
  await page.getByLabel('Search entities by name or alias').fill(cfg.entity || 'milk');
  await page.getByLabel('Search entities by name or alias').press('Enter');
  await page.locator('[data-testid="stGraphVizChart"] svg').first().waitFor({ timeout: 30_000 });
  await page.waitForTimeout(1000);
  await exceptions(page, 'Graphs');
  await shot(page, '3-graphs');
}

async function results(page) {
  const t0 = Date.now();
  await gotoPage(page, 'Results');
  await choose(page, 'Run', cfg.run, false);
  await page.getByText(/questions × [0-9]+ methods/).waitFor({ timeout: 120_000 });
  await page.locator('[data-testid="stImage"] img').first().waitFor({ timeout: 120_000 });
  report.results_load_ms = Date.now() - t0;
  // Again, as a returning user: predictions and scores come from the app's caches.
  await gotoPage(page, 'Ask');
  const t1 = Date.now();
  await gotoPage(page, 'Results');
  await page.getByText(/questions × [0-9]+ methods/).waitFor({ timeout: 120_000 });
  await page.locator('[data-testid="stImage"] img').first().waitFor({ timeout: 120_000 });
  report.results_reload_ms = Date.now() - t1;
  const total = await page.getByText(/[0-9]+ of [0-9]+ questions/).innerText();
  await choose(page, 'Show', 'A and B give different answers');
  const filtered = page.getByText(/[0-9]+ of [0-9]+ questions/).filter({ hasNotText: total });
  await filtered.waitFor({ timeout: 60_000 });
  report.disagreements = `${await filtered.innerText()} disagree`;
  await exceptions(page, 'Results');
  await shot(page, '4-results');
}

async function neo4jBrowser(context, page) {
  // The "Open in Neo4j Browser" link of the MetaKGRAG trace's integrated evidence: its URL
  // must carry exactly the Cypher the app shows under it, and Neo4j Browser must open with
  // that Cypher in its editor and draw the paths when it runs.
  if (!cfg.methods.includes('metakgrag')) return;
  await gotoPage(page, 'Reasoning');
  await page.getByRole('radiogroup').getByText('metakgrag', { exact: true }).click();
  // The link right after the "Integrated evidence" heading, and the expander right after
  // that link (the block's own "Cypher of this subgraph"). Locators resolve each time they
  // are used, so anchor both on the heading: a page's last link, taken while the rerun of
  // the radio click was still drawing, once was a start entity's path link while its
  // "following expander" was read after the evidence block had appeared (CI saw a 1-triple
  // URL beside a 3-triple Cypher).
  await idle(page);
  const heading = page.getByRole('heading', { name: /Integrated evidence/ });
  await heading.waitFor({ timeout: 30_000 });
  const link = heading.locator(
    'xpath=following::a[contains(normalize-space(.), "Open in Neo4j Browser")][1]');
  await link.waitFor({ timeout: 30_000 });
  const url = await link.getAttribute('href');
  const shown = link.locator('xpath=following::*[@data-testid="stExpander"][1]');
  const code = shown.locator('[data-testid="stCode"] code');
  // The radio click reruns the script; a rerun that lands after our click re-renders the
  // expander closed (CI saw this once), so open it until its code is visible.
  for (let attempt = 1; ; attempt++) {
    if (!(await code.isVisible())) await shown.locator('summary').click();
    try {
      await code.waitFor({ timeout: 5_000 });
      break;
    } catch (e) {
      if (attempt >= 6) throw e;
    }
  }
  report.app_cypher = (await code.innerText()).trim();
  report.browser_url_prefix = url.slice(0, url.indexOf('arg=') + 4);
  report.browser_url_cypher = decodeURIComponent(url.slice(url.indexOf('arg=') + 4));
  if (!cfg.browserPassword) return;
  await context.grantPermissions(['clipboard-read', 'clipboard-write'],
    { origin: new URL(url).origin });
  const b = await context.newPage();
  try {
    await runInNeo4jBrowser(b, url);
  } catch (e) {
    await b.screenshot({ path: path.join(cfg.out, 'failure-neo4j-browser.png') }).catch(() => {});
    throw e;
  } finally {
    await b.close();
  }
}

async function editorText(b, expected) {
  // Neo4j Browser 5's editor is Monaco, which renders only the visible part and wraps long
  // lines; select all and copy gives its exact text. The Browser may still be filling the
  // editor from the URL when we first select (a loaded machine once copied only the last
  // line: Monaco copies the cursor's line when nothing is selected), so read again, like
  // a wait for text, until it holds `expected` or 10 reads have passed; the caller
  // compares the last read.
  let text = '';
  for (let attempt = 1; attempt <= 10; attempt++) {
    await b.locator('[data-testid="activeEditor"] .view-lines').first().click();
    await b.keyboard.press('Control+A');
    await b.keyboard.press('Control+C');
    text = await b.evaluate(() => navigator.clipboard.readText());
    if (text === expected) break;
    await b.waitForTimeout(1_000);
  }
  return text;
}

async function runInNeo4jBrowser(b, url) {
  await b.goto(url);
  const pw = b.locator('input[data-testid="password"]');
  await pw.waitFor({ timeout: 30_000 }).catch(() => {});
  if (await pw.count()) {
    await b.locator('input[data-testid="username"]').fill('neo4j');
    await pw.fill(cfg.browserPassword);
    await b.locator('button[data-testid="connect"]').click();
    await b.getByText(/You are connected as user/).first().waitFor({ timeout: 30_000 });
  }
  await b.locator('[data-testid="activeEditor"] .view-lines').first()
    .waitFor({ timeout: 30_000 });
  await b.waitForTimeout(500);
  await b.screenshot({ path: path.join(cfg.out, '5-neo4j-browser-editor.png') });
  report.screenshots.push(path.join(cfg.out, '5-neo4j-browser-editor.png'));
  report.browser_editor_cypher = await editorText(b, report.app_cypher);
  await b.locator('[data-testid="editor-Run"]').first().click({ timeout: 30_000 });
  const overview = b.getByText(/Displaying [0-9]+ nodes?, [0-9]+ relationships?/).first();
  await overview.waitFor({ timeout: 30_000 });
  report.neo4j_browser = await overview.innerText();
  // Caption the relationships with their predicate (docs/browser.md), for the screenshot.
  await b.getByText(/^REL \([0-9]+\)$/).first().click();
  await b.getByText('predicate', { exact: true }).first().click();
  await b.locator('body').click({ position: { x: 5, y: 400 } });
  await b.waitForTimeout(800);
  await b.screenshot({ path: path.join(cfg.out, '6-neo4j-browser.png') });
  report.screenshots.push(path.join(cfg.out, '6-neo4j-browser.png'));
}

(async () => {
  fs.mkdirSync(cfg.out, { recursive: true });
  const browser = await chromium.launch({ executablePath: cfg.chromium || '/usr/bin/chromium',
    args: CHROMIUM_FLAGS });
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  const page = await context.newPage();
  // The app must load nothing from the internet (no CDN): record every other host it asks.
  report.external_requests = [];
  page.on('request', r => {
    const url = new URL(r.url());
    if (url.protocol.startsWith('http') && !['127.0.0.1', 'localhost'].includes(url.hostname)) {
      report.external_requests.push(r.url().slice(0, 200));
    }
  });
  try {
    await ask(page);
    await reasoning(page);
    await graphs(page);
    await results(page);
    await neo4jBrowser(context, page);
  } catch (e) {
    await page.screenshot({ path: path.join(cfg.out, 'failure.png'), fullPage: true })
      .catch(() => {});
    console.error(e.stack || String(e));
    console.log(JSON.stringify(report));
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
  if (!process.exitCode) console.log(JSON.stringify(report));
})();
