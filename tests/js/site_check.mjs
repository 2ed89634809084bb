// Drive the built registry site in a real headless Chromium (Debian's, through
// playwright-core): the index lists every record, search filters, sorting reorders, each badge
// renders, and a record page opens. Prints one JSON line of findings for the Rust test to
// assert on, and saves a screenshot.
//
// usage: node site_check.mjs SITE_DIR SCREENSHOT_PNG [CHROMIUM]
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

// playwright-core lives in .test-env/node (scripts/test-deps.sh), as the SDK does for client.mjs.
const here = path.dirname(fileURLToPath(import.meta.url));
const modules =
  process.env.MCPJAIL_TEST_NODE_MODULES ?? path.join(here, '..', '..', '.test-env', 'node', 'node_modules');
const { chromium } = await import(pathToFileURL(path.join(modules, 'playwright-core', 'index.mjs')).href);

const [site, shot, exe = '/usr/bin/chromium'] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: exe,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const out = {};
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(pathToFileURL(path.join(site, 'index.html')).href);
  const names = () => page.$$eval('#records tbody tr:not([hidden]) td:first-child', (tds) => tds.map((t) => t.textContent.trim()));
  out.rows = await names();
  out.count = await page.textContent('#count');
  // Search (by keyboard, as a user would).
  await page.focus('#search');
  await page.keyboard.type('launders');
  out.searched = await names();
  out.searchedCount = await page.textContent('#count');
  await page.fill('#search', '');
  // Sort by server, then again (descending); by keyboard on the header button.
  await page.focus('th button[data-col="0"]');
  await page.keyboard.press('Enter');
  out.sortedAsc = await names();
  out.ariaSortAsc = await page.getAttribute('th:nth-child(1)', 'aria-sort');
  await page.keyboard.press('Enter');
  out.sortedDesc = await names();
  // Every badge image loaded and has a size.
  out.badges = await page.$$eval('#records img', (imgs) => imgs.map((i) => ({ src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0 })));
  await page.screenshot({ path: shot, fullPage: true });
  // A record page opens from its link (by its accessible name) and shows its evidence table.
  await page.getByRole('link', { name: 'naive-files', exact: true }).click();
  out.recordTitle = await page.textContent('h1');
  out.evidence = await page.$$eval('table:has(caption:text-is("Evidence")) tbody tr', (rows) => rows.map((r) => r.textContent));
  out.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
