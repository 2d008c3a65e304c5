#!/usr/bin/env bash
# Captures real outputs of the kinds the optimizer does not shrink yet, next to the ones
# capture.sh, capture_runners.sh and capture_deps.sh write: ripgrep's four output shapes
# and grep under a path with a space in it, flat package listings (pip freeze, pip list,
# npm ls --depth=0, cargo tree --depth 1), aider's repository map of a crate, minified
# bundles read whole, machine JSON (cargo metadata, pip list --format=json, pip inspect),
# version listings and a crate's changelog, and test runs whose failures print long stack
# traces through node_modules (mocha with supertest and chai, node's own test runner).
#
# Every file this writes is the combined stdout+stderr of one real command, run on this
# machine against the Trimgate checkout, against copies of crates from cargo's registry
# cache, or against small throwaway projects created here under a temporary directory.
# Like capture_deps.sh it replaces only its own outputs (the names below) and leaves every
# other file in outputs/ alone; its MANIFEST rows go into their own section of
# outputs/MANIFEST.md, replaced on each run (the other sections stay as they are).
#
# Not captured: `npm audit --json` (the registry here answers its advisories endpoint with
# 405 Method Not Allowed, so there is no report to capture).
#
# Usage: bash bench/corpus/capture_v3.sh   (needs ripgrep (Debian's `ripgrep`), cargo with
# the workspace's crates in its registry cache (tokio, regex, serde_json: a build or
# `cargo fetch` of the checkout puts them there), jq, python3 with venv, node/npm, git, and
# the PyPI and npm registries.)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
OUT="$here/outputs"
mkdir -p "$OUT"
T="$(mktemp -d /tmp/trimgate-corpus-v3.XXXXXX)"
trap 'rm -rf "$T"' EXIT
ROWS="$T/manifest-rows.md"
: >"$ROWS"
SECTION="## Outputs of capture_v3.sh"

# run and manifest_row: one output and its MANIFEST row.
source "$here/capture_lib.sh"

for tool in rg jq cargo npm node git python3; do
  command -v "$tool" >/dev/null || { echo "capture_v3.sh: $tool not found" >&2; exit 1; }
done

# crate NAME: the newest copy of a crate in cargo's registry cache.
crate() {
  local dir
  dir=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$1"-[0-9]* 2>/dev/null | sort -V | tail -n 1)
  [[ -n $dir ]] || { echo "capture_v3.sh: crate $1 is not in cargo's registry cache (cargo fetch in the checkout)" >&2; exit 1; }
  echo "$dir"
}

########################################################################################
# 1. ripgrep over a copy of tokio's sources: path:line:text, path:text (piped), headings,
#    context lines; grep -rn under a path with a space in it (serde_json's sources)
########################################################################################
cp -r "$(crate tokio)" "$T/tokio"
run rg-n-tokio-unsafe "$T/tokio" "rg -n unsafe"
run rg-tokio-pub-fn-sorted "$T/tokio" "rg 'pub fn' | sort"
run rg-heading-tokio-waker "$T/tokio" "rg --heading -n Waker"
run rg-context-tokio-unsafe "$T/tokio" "rg -n -C 2 unsafe"
run rg-context-tokio-spawn-blocking "$T/tokio" "rg -n -C 2 spawn_blocking"
mkdir -p "$T/vendor libs"
cp -r "$(crate serde_json)" "$T/vendor libs/serde_json"
run grep-rn-spaced-path-serde-json "$T" "grep -rn 'ErrorCode::' 'vendor libs/serde_json/src'"

########################################################################################
# 2. Changelogs of crates, read whole
########################################################################################
run cat-changelog-tokio "$T/tokio" "cat CHANGELOG.md"
cp -r "$(crate regex)" "$T/regex"
run cat-changelog-regex "$T/regex" "cat CHANGELOG.md"

########################################################################################
# 3. Python: a venv with the provider SDKs and their tools (about a hundred packages),
#    and a small one with requests alone for pip inspect (its JSON holds every package's
#    whole metadata, descriptions included)
########################################################################################
python3 -m venv "$T/sdk"
"$T/sdk/bin/pip" install -q --disable-pip-version-check openai anthropic boto3 google-genai litellm \
  langchain-core pytest pytest-asyncio mypy ruff pandas >/dev/null
run pip-freeze-sdk "$T" "sdk/bin/pip freeze"
run pip-list-sdk "$T" "sdk/bin/pip list --disable-pip-version-check"
run pip-list-json-sdk "$T" "sdk/bin/pip list --format=json --disable-pip-version-check"
python3 -m venv "$T/req"
"$T/req/bin/pip" install -q --disable-pip-version-check requests >/dev/null
run pip-inspect-requests "$T" "req/bin/pip inspect --disable-pip-version-check"
run pip-index-versions-boto3 "$T" "sdk/bin/pip index versions boto3 --disable-pip-version-check"

########################################################################################
# 4. Rust: the Trimgate workspace's direct dependencies and its metadata
########################################################################################
export CARGO_TARGET_DIR="$HOME/.cache/trimgate-target"
run cargo-tree-depth1-workspace "$repo" "cargo tree --offline --depth 1"
run cargo-metadata-workspace-nodeps "$repo" "cargo metadata --format-version 1 --no-deps --offline"
run cargo-metadata-workspace-pretty "$repo" "cargo metadata --format-version 1 --no-deps --offline | python3 -m json.tool"
run cargo-metadata-aws-jq "$repo" "cargo metadata --format-version 1 --filter-platform x86_64-unknown-linux-gnu --offline | jq '[.packages[] | select(.name | startswith(\"aws-\"))]'"

########################################################################################
# 5. npm: a storefront service with many dependencies, its listing, minified bundles
#    read whole, version listings, and its tests under mocha (supertest + chai: failures
#    from inside express print stacks through node_modules) and node's test runner
########################################################################################
mkdir -p "$T/storefront/lib" "$T/storefront/test" "$T/storefront/node-tests"
cd "$T/storefront"
cat >package.json <<'EOF'
{
  "name": "storefront",
  "version": "1.4.0",
  "private": true,
  "scripts": { "test": "mocha" },
  "dependencies": {
    "axios": "^1.7.0", "bcryptjs": "^2.4.3", "body-parser": "^1.20.0", "bootstrap": "^5.3.0",
    "compression": "^1.7.4", "cookie-parser": "^1.4.6", "cors": "^2.8.5", "date-fns": "^3.6.0",
    "dayjs": "^1.11.0", "debug": "^4.3.0", "dotenv": "^16.4.0", "express": "^4.21.0",
    "express-session": "^1.18.0", "helmet": "^7.1.0", "http-errors": "^2.0.0", "ioredis": "^5.4.0",
    "joi": "^17.13.0", "jquery": "^3.7.0", "jsonwebtoken": "^9.0.0", "lodash": "^4.17.21",
    "marked": "^12.0.0", "moment": "^2.30.0", "morgan": "^1.10.0", "multer": "^1.4.5-lts.1",
    "pg": "^8.12.0", "pino": "^9.3.0", "qs": "^6.12.0", "react": "^18.3.0", "react-dom": "^18.3.0",
    "redux": "^5.0.0", "semver": "^7.6.0", "uuid": "^10.0.0", "validator": "^13.12.0",
    "winston": "^3.13.0", "ws": "^8.18.0", "yargs": "^17.7.0", "zod": "^3.23.0"
  },
  "devDependencies": {
    "chai": "^4.4.1", "eslint": "^8.57.0", "mocha": "^10.7.0", "nodemon": "^3.1.0",
    "prettier": "^3.3.0", "sinon": "^18.0.0", "supertest": "^7.0.0", "typescript": "^5.5.0"
  }
}
EOF
npm install --no-audit --no-fund >&2

cat >lib/cart.js <<'EOF'
const _ = require('lodash');

const TAX = { FI: 0.24, DE: 0.19, SE: 0.25, US: 0 };

function lineTotal(line) {
  if (!Number.isInteger(line.qty)) {
    throw new RangeError(`qty must be a whole number, got ${line.qty} for ${line.sku}`);
  }
  return line.qty * line.unitCents;
}

function totals(cart) {
  const subtotal = _.sumBy(cart.lines, lineTotal);
  const rate = TAX[cart.country];
  const tax = Math.round(subtotal * rate);
  return { subtotal, tax, total: subtotal + tax };
}

function applyCoupon(cart, code) {
  const coupon = cart.coupons.find((c) => c.code === code);
  return { ...cart, discountCents: coupon.amountCents };
}

module.exports = { totals, applyCoupon, lineTotal };
EOF
cat >lib/app.js <<'EOF'
const _ = require('lodash');
const express = require('express');
const bodyParser = require('body-parser');
const { totals, applyCoupon } = require('./cart');

const carts = new Map();

function createApp() {
  const app = express();
  app.use(bodyParser.json());

  app.post('/carts', (req, res) => {
    const id = String(carts.size + 1);
    carts.set(id, { id, country: req.body.country, lines: [], coupons: [{ code: 'WELCOME5', amountCents: 500 }] });
    res.status(201).json({ id });
  });

  app.post('/carts/:id/lines', (req, res) => {
    const cart = carts.get(req.params.id);
    cart.lines.push({ sku: req.body.sku, qty: req.body.qty, unitCents: req.body.unitCents });
    res.json(totals(cart));
  });

  app.post('/carts/:id/import', (req, res) => {
    const cart = carts.get(req.params.id);
    cart.lines = _.map(req.body.lines, (l) => _.pick(l, ['sku', 'qty', 'unitCents']));
    res.json(totals(cart));
  });

  app.get('/carts/:id/totals', (req, res) => {
    res.json(totals(carts.get(req.params.id)));
  });

  app.post('/carts/:id/coupon', (req, res) => {
    const cart = applyCoupon(carts.get(req.params.id), req.body.code);
    res.json({ discountCents: cart.discountCents });
  });

  return app;
}

module.exports = { createApp };
EOF
cat >test/carts.spec.js <<'EOF'
const request = require('supertest');
const { expect } = require('chai');
const { createApp } = require('../lib/app');

describe('carts API', function () {
  const app = createApp();
  let id;

  before(async function () {
    const res = await request(app).post('/carts').send({ country: 'FI' }).expect(201);
    id = res.body.id;
  });

  for (const [sku, qty, unitCents] of [['TEA-01', 2, 450], ['MUG-07', 1, 1299], ['BAG-02', 3, 199]]) {
    it(`adds ${qty} x ${sku}`, async function () {
      const res = await request(app).post(`/carts/${id}/lines`).send({ sku, qty, unitCents }).expect(200);
      expect(res.body).to.have.property('total');
    });
  }

  it('reports totals with Finnish VAT', async function () {
    const res = await request(app).get(`/carts/${id}/totals`).expect(200);
    expect(res.body).to.deep.equal({ subtotal: 2796, tax: 671, total: 3467 });
  });

  it('applies a known coupon', async function () {
    await request(app).post(`/carts/${id}/coupon`).send({ code: 'WELCOME5' }).expect(200, { discountCents: 500 });
  });

  it('rejects an unknown coupon with 404', async function () {
    await request(app).post(`/carts/${id}/coupon`).send({ code: 'SUMMER24' }).expect(404);
  });

  it('computes totals for a cart shipped to Norway', async function () {
    const res = await request(app).post('/carts').send({ country: 'NO' }).expect(201);
    await request(app).post(`/carts/${res.body.id}/lines`).send({ sku: 'TEA-01', qty: 1, unitCents: 450 }).expect(200);
    const t = await request(app).get(`/carts/${res.body.id}/totals`).expect(200);
    expect(t.body.total).to.be.a('number');
  });

  it('returns 404 for a cart that does not exist', async function () {
    await request(app).get('/carts/999/totals').expect(404);
  });
});
EOF
cat >test/cart.spec.js <<'EOF'
const { expect } = require('chai');
const { totals, lineTotal } = require('../lib/cart');

describe('cart arithmetic', function () {
  const cases = [];
  for (let qty = 1; qty <= 12; qty++) cases.push([qty, 250 * qty]);
  for (const [qty, cents] of cases) {
    it(`line of ${qty} at 2.50 is ${cents} cents`, function () {
      expect(lineTotal({ qty, unitCents: 250 })).to.equal(cents);
    });
  }
  it('adds German VAT', function () {
    expect(totals({ country: 'DE', lines: [{ qty: 1, unitCents: 1000 }] })).to.deep.equal({ subtotal: 1000, tax: 190, total: 1190 });
  });
  it('rounds tax half up', function () {
    expect(totals({ country: 'FI', lines: [{ qty: 1, unitCents: 1025 }] }).tax).to.equal(247);
  });
});
EOF
cat >test/import.spec.js <<'EOF'
const request = require('supertest');
const { expect } = require('chai');
const { createApp } = require('../lib/app');

// A supplier's order sheet, as the import endpoint receives it.
const SHEET = [];
for (let i = 1; i <= 30; i++) {
  SHEET.push({ sku: `SKU-${String(i).padStart(3, '0')}`, qty: i % 4 + 1, unitCents: 100 + i * 15, note: 'restock' });
}
SHEET[16].qty = 2.5;

describe('bulk import', function () {
  const app = createApp();
  let id;

  before(async function () {
    id = (await request(app).post('/carts').send({ country: 'SE' }).expect(201)).body.id;
  });

  for (let n = 5; n <= 30; n += 5) {
    it(`imports the first ${n} lines of the sheet`, async function () {
      const res = await request(app).post(`/carts/${id}/import`).send({ lines: SHEET.slice(0, n) }).expect(200);
      expect(res.body.subtotal).to.be.above(0);
    });
  }
});
EOF
cat >node-tests/cart.test.js <<'EOF'
const test = require('node:test');
const assert = require('node:assert/strict');
const { totals, lineTotal, applyCoupon } = require('../lib/cart');

test('line totals', async (t) => {
  for (let qty = 1; qty <= 10; qty++) {
    await t.test(`qty ${qty} at 3.99`, () => {
      assert.equal(lineTotal({ sku: 'X', qty, unitCents: 399 }), qty * 399);
    });
  }
});

test('VAT by country', async (t) => {
  const cases = [['FI', 1000, 240], ['DE', 1000, 190], ['SE', 1000, 250], ['US', 1000, 0], ['NO', 1000, 250]];
  for (const [country, cents, tax] of cases) {
    await t.test(`${country} on ${cents} cents`, () => {
      assert.deepEqual(totals({ country, lines: [{ sku: 'X', qty: 1, unitCents: cents }] }), { subtotal: cents, tax, total: cents + tax });
    });
  }
});

test('coupons', async (t) => {
  const cart = { coupons: [{ code: 'WELCOME5', amountCents: 500 }] };
  await t.test('known code', () => {
    assert.equal(applyCoupon(cart, 'WELCOME5').discountCents, 500);
  });
  await t.test('unknown code gives no discount', () => {
    assert.equal(applyCoupon(cart, 'SUMMER24').discountCents, 0);
  });
});
EOF

run npm-ls-depth0-storefront "$T/storefront" "npm ls --depth=0"
run cat-react-dom-min "$T/storefront" "cat node_modules/react-dom/umd/react-dom.production.min.js"
run cat-lodash-min "$T/storefront" "cat node_modules/lodash/lodash.min.js"
run cat-bootstrap-min-css "$T/storefront" "cat node_modules/bootstrap/dist/css/bootstrap.min.css"
run npm-view-react-dom-versions-json "$T/storefront" "npm view react-dom versions --json"
run npm-view-types-node-versions-json "$T/storefront" "npm view @types/node versions --json"
run mocha-storefront "$T/storefront" "npx mocha --color"
run mocha-storefront-full-trace "$T/storefront" "npx mocha --full-trace"
run node-test-storefront "$T/storefront" "node --test node-tests/"

########################################################################################
# 6. Repository maps: aider's --show-repo-map of a crate (tokio's sources, committed to a
#    git repository of their own; no model call is made, the key is never used)
########################################################################################
python3 -m venv "$T/aider"
if "$T/aider/bin/pip" install -q --disable-pip-version-check aider-chat >/dev/null 2>&1; then
  cp -r "$(crate tokio)" "$T/tokio-map"
  (
    cd "$T/tokio-map"
    git init -q -b main
    git add -A
    GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z \
      git -c user.name=ci -c user.email=ci@example.com commit -q -m "tokio sources"
  )
  run aider-repo-map-tokio "$T/tokio-map" "OPENAI_API_KEY=unused $T/aider/bin/aider --show-repo-map --no-check-update --no-analytics --no-gitignore --no-show-model-warnings --map-tokens 8192 --model gpt-4o"
else
  echo "capture_v3.sh: aider-chat did not install; aider-repo-map-tokio not captured" >&2
fi

########################################################################################
# MANIFEST: this script's section, replaced as a whole; the sections of the other
# scripts, before or after it, are left as they are.
########################################################################################
manifest="$OUT/MANIFEST.md"
drop_section "$manifest" "$SECTION"
{
  echo
  echo "$SECTION"
  echo
  echo "Written by \`bench/corpus/capture_v3.sh\` on $(uname -sm), $(cargo --version | cut -d' ' -f1-2), node $(node --version), npm $(npm --version), $(python3 --version), $(rg --version | head -n 1), $(jq --version)."
  echo "Crate sources are copies of cargo's registry cache; \`\$TMP/tokio\` is tokio's, \`\$TMP/regex\` regex's, \`\$TMP/vendor libs/serde_json\` serde_json's."
  echo
  cat "$ROWS"
} >>"$manifest"
du -sh "$OUT"
