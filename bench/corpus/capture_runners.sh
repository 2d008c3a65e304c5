#!/usr/bin/env bash
# Captures real test-runner outputs and real service logs for the savings corpus, next to
# the outputs of capture.sh (which it leaves in place).
#
# One small checkout library (cart arithmetic: tax, money formatting, quantities, shipping)
# is written in JavaScript, Ruby, Go and Java with the same table-driven tests and the same
# four bugs, and run under mocha, vitest, jest, rspec, go test and the JUnit 5 console
# launcher, so every runner prints hundreds of passing tests and a handful of failures.
# Then real servers run under scripted load and their logs are saved: the Trimgate gateway
# itself (debug level, in front of its mock provider), nginx (access and error logs),
# redis-server (verbose) and PostgreSQL (every statement logged). Each log has a few
# distinct lines (an upstream refused, a parse error, a missing relation) among thousands
# of repeated ones.
#
# Not captured, because the tool cannot run here: Maven surefire and Gradle (their plugins
# come from Maven Central, which this machine cannot reach), dotnet test (no .NET SDK).
#
# Usage: bash bench/corpus/capture_runners.sh   (needs node/npm and the npm registry, ruby
# with rspec, go, java with Debian's junit5, nginx, redis-server, PostgreSQL 15 binaries, and
# a built target/debug/trimgate.) Rewrites only its own outputs and its own MANIFEST section.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
OUT="$here/outputs"
mkdir -p "$OUT"
T="$(mktemp -d /tmp/trimgate-runners.XXXXXX)"
chmod 755 "$T"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [[ -n ${PGDATA_DIR:-} ]]; then su postgres -c "/usr/lib/postgresql/15/bin/pg_ctl -D $PGDATA_DIR -m fast stop" >/dev/null 2>&1 || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
ROWS="$T/manifest-rows.md"
: >"$ROWS"
SECTION="## Test runners and service logs (capture_runners.sh)"

# run and manifest_row: one output and its MANIFEST row.
source "$here/capture_lib.sh"

# How many amounts each tax table tests: about 16 × (AMOUNTS + 2) tax tests per runner.
AMOUNTS=${AMOUNTS:-60}

########################################################################################
# 1. JavaScript: mocha, vitest, jest
########################################################################################
mkdir -p "$T/cart/lib"
cd "$T/cart"
npm init -y >/dev/null
npm install --no-audit --no-fund mocha vitest jest >&2
cat >"$T/cart/lib/cart.cjs" <<'EOF'
// Cart arithmetic for the checkout service. Amounts are integer cents.
'use strict';

const TAX_RATES = {
  AT: 0.2, BE: 0.21, DE: 0.19, DK: 0.25, ES: 0.21, FI: 0.24, FR: 0.2, GB: 0.2,
  IE: 0.23, IT: 0.22, NL: 0.21, PL: 0.23, PT: 0.23, SE: 0.25, JP: 0.1, US_CA: 0.0725,
};

function taxFor(region, cents) {
  const rate = TAX_RATES[region];
  if (rate === undefined) throw new Error(`unknown tax region: ${region}`);
  // Half-up to the cent; Finland's rate was raised, the table above is current.
  return region === 'FI' && cents > 90000 ? Math.floor(cents * rate) : Math.round(cents * rate);
}

const ZERO_DECIMAL = ['JPY'];

function formatMoney(cents, currency) {
  const digits = ZERO_DECIMAL.includes(currency) ? 0 : 2;
  const units = digits === 0 ? cents : cents / 100;
  return `${units.toFixed(digits)} ${currency}`;
}

function parseQuantity(text) {
  const n = parseInt(text, 10);
  if (!Number.isInteger(n) || n <= 0 || n > 999) throw new RangeError(`invalid quantity: ${JSON.stringify(text)}`);
  return n;
}

const ZONES = { domestic: [500, 120], eu: [900, 210], world: [1500, 380], remote: [2400, 650] };

function shippingFor(grams, zone) {
  const z = ZONES[zone];
  if (!z) throw new Error(`unknown shipping zone: ${zone}`);
  const [base, perKilo] = z;
  const kilos = Math.ceil(grams / 1000);
  if (zone === 'remote' && grams < 2000) return base;
  return base + Math.max(0, kilos - 1) * perKilo;
}

const COUPONS = {
  WELCOME10: { percent: 10, min: 0 },
  SPRING25: { percent: 25, min: 5000 },
  VIP40: { percent: 40, min: 20000 },
  FREESHIP: { percent: 0, min: 3000 },
};

function applyCoupon(cents, code) {
  const c = COUPONS[code];
  if (!c) return { total: cents, applied: false, reason: 'unknown coupon' };
  if (cents < c.min) return { total: cents, applied: false, reason: `minimum order ${c.min}` };
  return { total: cents - Math.round((cents * c.percent) / 100), applied: true, reason: null };
}

module.exports = { TAX_RATES, taxFor, formatMoney, parseQuantity, shippingFor, applyCoupon };
EOF
# The suites are generated from tables, as such tests often are.
cat >"$T/cart/gen.cjs" <<'EOF'
// Writes the cart test suites for one runner: node gen.cjs <mocha|jest|vitest> <dir> <amounts>
'use strict';
const fs = require('fs');
const path = require('path');
const [, , runner, dir, amountsArg] = process.argv;
const AMOUNTS = Number(amountsArg || 20);
fs.mkdirSync(dir, { recursive: true });

// The behaviour the tests expect (the specification the library should meet).
const RATES = require('./lib/cart.cjs').TAX_RATES;
const tax = (r, c) => Math.round(c * RATES[r]);
const money = (c, cur) => (['JPY', 'KRW'].includes(cur) ? `${c.toFixed(0)} ${cur}` : `${(c / 100).toFixed(2)} ${cur}`);
const ZONES = { domestic: [500, 120], eu: [900, 210], world: [1500, 380], remote: [2400, 650] };
const ship = (g, z) => ZONES[z][0] + Math.max(0, Math.ceil(g / 1000) - 1) * ZONES[z][1];

const amounts = [];
for (let i = 0; i < AMOUNTS; i++) amounts.push(((i * 7919) % 99000) + 199 + (i % 3));
amounts.push(99999);

const ext = runner === 'mocha' ? '.spec.js' : runner === 'vitest' ? '.test.mjs' : '.test.js';
const header = runner === 'vitest'
  ? "import { describe, it, expect } from 'vitest';\nimport cart from '../lib/cart.cjs';\n"
  : runner === 'mocha'
    ? "const assert = require('node:assert/strict');\nconst cart = require('../lib/cart.cjs');\n"
    : "const cart = require('../lib/cart.cjs');\n";
const eq = (actual, expected) => runner === 'mocha'
  ? `assert.equal(${actual}, ${expected});`
  : `expect(${actual}).toBe(${expected});`;
const deepEq = (actual, expected) => runner === 'mocha'
  ? `assert.deepEqual(${actual}, ${expected});`
  : `expect(${actual}).toEqual(${expected});`;
const throws = (call, re) => runner === 'mocha'
  ? `assert.throws(() => ${call}, ${re});`
  : `expect(() => ${call}).toThrow(${re});`;

function write(name, body) {
  fs.writeFileSync(path.join(dir, name + ext), header + '\n' + body);
}

for (const region of Object.keys(RATES)) {
  let b = `describe('taxFor ${region}', () => {\n`;
  for (const c of amounts) b += `  it('taxes ${c} cents at ${RATES[region]}', () => {\n    ${eq(`cart.taxFor('${region}', ${c})`, tax(region, c))}\n  });\n`;
  b += `  it('rejects a negative region lookup', () => {\n    ${throws(`cart.taxFor('${region.toLowerCase()}x', 100)`, '/unknown tax region/')}\n  });\n});\n`;
  write(`tax-${region.toLowerCase()}`, b);
}

let f = `describe('formatMoney', () => {\n`;
for (const cur of ['EUR', 'USD', 'GBP', 'SEK', 'CHF']) {
  f += `  describe('${cur}', () => {\n`;
  for (const c of amounts.slice(0, 8)) f += `    it('formats ${c} as ${money(c, cur)}', () => {\n      ${eq(`cart.formatMoney(${c}, '${cur}')`, `'${money(c, cur)}'`)}\n    });\n`;
  f += `  });\n`;
}
f += `  describe('zero-decimal currencies', () => {\n`;
for (const [c, cur] of [[1500, 'JPY'], [98000, 'JPY'], [1234, 'KRW']]) f += `    it('formats ${c} ${cur} without decimals', () => {\n      ${eq(`cart.formatMoney(${c}, '${cur}')`, `'${money(c, cur)}'`)}\n    });\n`;
f += `  });\n});\n`;
write('format-money', f);

for (const zone of Object.keys(ZONES)) {
  let s = `describe('shippingFor ${zone}', () => {\n`;
  for (const g of [100, 500, 999, 1000, 1001, 1500, 2500, 4000, 5000, 7500, 9999, 10000]) s += `  it('charges ${ship(g, zone)} for ${g} g', () => {\n    ${eq(`cart.shippingFor(${g}, '${zone}')`, ship(g, zone))}\n  });\n`;
  s += `});\n`;
  write(`shipping-${zone}`, s);
}

let q = `describe('parseQuantity', () => {\n  describe('accepts', () => {\n`;
for (const t of ['1', '2', '7', '10', '12', '25', '99', '100', '250', '999', ' 3', '4 ', '007']) q += `    it('accepts ${JSON.stringify(t)}', () => {\n      ${eq(`cart.parseQuantity(${JSON.stringify(t)})`, parseInt(t, 10))}\n    });\n`;
q += `  });\n  describe('rejects', () => {\n`;
for (const t of ['0', '-1', '', 'abc', '1000', '12abc', 'NaN']) q += `    it('rejects ${JSON.stringify(t)}', () => {\n      ${throws(`cart.parseQuantity(${JSON.stringify(t)})`, '/invalid quantity/')}\n    });\n`;
q += `  });\n});\n`;
write('parse-quantity', q);

const COUPONS = { WELCOME10: [10, 0], SPRING25: [25, 5000], VIP40: [40, 20000], FREESHIP: [0, 3000] };
for (const [code, [pct, min]] of Object.entries(COUPONS)) {
  let s = `describe('applyCoupon ${code}', () => {\n`;
  for (const c of [999, 2999, 3000, 4999, 5000, 19999, 20000, 45000]) {
    const want = c < min ? { total: c, applied: false, reason: `minimum order ${min}` } : { total: c - Math.round((c * pct) / 100), applied: true, reason: null };
    s += `  it('${want.applied ? 'applies' : 'refuses'} ${code} on ${c}', () => {\n    ${deepEq(`cart.applyCoupon(${c}, '${code}')`, JSON.stringify(want))}\n  });\n`;
  }
  s += `});\n`;
  write(`coupon-${code.toLowerCase()}`, s);
}
EOF
node gen.cjs mocha test "$AMOUNTS"
node gen.cjs vitest vtest "$AMOUNTS"
node gen.cjs jest jtest "$AMOUNTS"
echo "export default { test: { include: ['vtest/**/*.test.mjs'] } };" >vitest.config.mjs
echo "module.exports = { testMatch: ['**/jtest/**/*.test.js'] };" >jest.config.js
run mocha-spec-failures "$T/cart" "npx mocha --reporter spec --color 'test/*.spec.js'"
run vitest-default-failures "$T/cart" "npx vitest run --color"
run vitest-verbose-failures "$T/cart" "npx vitest run --reporter=verbose"
run jest-verbose-failures "$T/cart" "npx jest --verbose --color"
run jest-many-suites "$T/cart" "npx jest --color"

########################################################################################
# 2. Ruby: rspec, documentation and progress formatters
########################################################################################
mkdir -p "$T/cart-rb/lib" "$T/cart-rb/spec"
cat >"$T/cart-rb/lib/cart.rb" <<'EOF'
# Cart arithmetic for the checkout service. Amounts are integer cents.
module Cart
  TAX_RATES = {
    'AT' => 0.2, 'BE' => 0.21, 'DE' => 0.19, 'DK' => 0.25, 'ES' => 0.21, 'FI' => 0.24, 'FR' => 0.2, 'GB' => 0.2,
    'IE' => 0.23, 'IT' => 0.22, 'NL' => 0.21, 'PL' => 0.23, 'PT' => 0.23, 'SE' => 0.25, 'JP' => 0.1, 'US_CA' => 0.0725
  }.freeze

  ZONES = { 'domestic' => [500, 120], 'eu' => [900, 210], 'world' => [1500, 380], 'remote' => [2400, 650] }.freeze

  module_function

  def tax_for(region, cents)
    rate = TAX_RATES.fetch(region) { raise ArgumentError, "unknown tax region: #{region}" }
    return (cents * rate).floor if region == 'FI' && cents > 90_000

    (cents * rate).round
  end

  def format_money(cents, currency)
    return "#{cents} #{currency}" if currency == 'JPY'

    format('%d.%02d %s', cents / 100, cents % 100, currency)
  end

  def parse_quantity(text)
    n = text.to_i
    raise ArgumentError, "invalid quantity: #{text.inspect}" unless n.between?(1, 999)

    n
  end

  def shipping_for(grams, zone)
    base, per_kilo = ZONES.fetch(zone) { raise ArgumentError, "unknown shipping zone: #{zone}" }
    return base if zone == 'remote' && grams < 2000

    base + [(grams / 1000.0).ceil - 1, 0].max * per_kilo
  end
end
EOF
cat >"$T/cart-rb/spec/cart_spec.rb" <<'EOF'
require_relative '../lib/cart'

AMOUNTS = (0...Integer(ENV.fetch('AMOUNTS', '20'))).map { |i| ((i * 7919) % 99_000) + 199 + (i % 3) } + [99_999]

RSpec.describe Cart do
  describe '.tax_for' do
    Cart::TAX_RATES.each do |region, rate|
      context "in #{region}" do
        AMOUNTS.each do |cents|
          it "taxes #{cents} cents at #{rate}" do
            expect(Cart.tax_for(region, cents)).to eq((cents * rate + 0.5).floor)
          end
        end
      end
    end

    it 'rejects an unknown region' do
      expect { Cart.tax_for('XX', 100) }.to raise_error(ArgumentError, /unknown tax region/)
    end
  end

  describe '.format_money' do
    %w[EUR USD GBP SEK CHF].each do |currency|
      AMOUNTS.first(8).each do |cents|
        it "formats #{cents} #{currency}" do
          expect(Cart.format_money(cents, currency)).to eq(format('%d.%02d %s', cents / 100, cents % 100, currency))
        end
      end
    end

    it 'formats yen without decimals' do
      expect(Cart.format_money(1500, 'JPY')).to eq('1500 JPY')
    end

    it 'formats won without decimals' do
      expect(Cart.format_money(1234, 'KRW')).to eq('1234 KRW')
    end
  end

  describe '.parse_quantity' do
    %w[1 2 7 10 25 99 250 999 007].each do |text|
      it "accepts #{text.inspect}" do
        expect(Cart.parse_quantity(text)).to eq(text.to_i)
      end
    end

    ['0', '-1', '', 'abc', '1000', '12abc'].each do |text|
      it "rejects #{text.inspect}" do
        expect { Cart.parse_quantity(text) }.to raise_error(ArgumentError, /invalid quantity/)
      end
    end
  end

  describe '.shipping_for' do
    Cart::ZONES.each do |zone, (base, per_kilo)|
      context "to #{zone}" do
        [100, 500, 999, 1000, 1001, 1500, 2500, 4000, 5000, 7500, 9999, 10_000].each do |grams|
          want = base + [(grams / 1000.0).ceil - 1, 0].max * per_kilo
          it "charges #{want} for #{grams} g" do
            expect(Cart.shipping_for(grams, zone)).to eq(want)
          end
        end
      end
    end
  end
end
EOF
run rspec-documentation "$T/cart-rb" "AMOUNTS=$AMOUNTS rspec --format documentation --force-color"
run rspec-progress "$T/cart-rb" "AMOUNTS=$AMOUNTS rspec"

########################################################################################
# 3. Go: go test -v with table-driven subtests (standard library only)
########################################################################################
mkdir -p "$T/checkout-go/tax" "$T/checkout-go/money" "$T/checkout-go/shipping"
cd "$T/checkout-go"
cat >"$T/checkout-go/go.mod" <<'EOF'
module example.com/checkout

go 1.19
EOF
cat >"$T/checkout-go/tax/tax.go" <<'EOF'
// Package tax computes sales tax in integer cents.
package tax

import (
	"fmt"
	"math"
)

// Rates by region.
var Rates = map[string]float64{
	"AT": 0.2, "BE": 0.21, "DE": 0.19, "DK": 0.25, "ES": 0.21, "FI": 0.24, "FR": 0.2, "GB": 0.2,
	"IE": 0.23, "IT": 0.22, "NL": 0.21, "PL": 0.23, "PT": 0.23, "SE": 0.25, "JP": 0.1, "US_CA": 0.0725,
}

// For returns the tax on cents in region, rounded half up.
func For(region string, cents int64) (int64, error) {
	rate, ok := Rates[region]
	if !ok {
		return 0, fmt.Errorf("unknown tax region %q", region)
	}
	if region == "FI" && cents > 90000 {
		return int64(math.Floor(float64(cents) * rate)), nil
	}
	return int64(math.Round(float64(cents) * rate)), nil
}
EOF
cat >"$T/checkout-go/money/money.go" <<'EOF'
// Package money formats amounts for receipts.
package money

import (
	"fmt"
	"strconv"
	"strings"
)

var zeroDecimal = map[string]bool{"JPY": true}

// Format renders cents in currency: 1234 EUR → "12.34 EUR".
func Format(cents int64, currency string) string {
	if zeroDecimal[currency] {
		return fmt.Sprintf("%d %s", cents, currency)
	}
	return fmt.Sprintf("%d.%02d %s", cents/100, cents%100, currency)
}

// ParseQuantity reads a line-item quantity between 1 and 999.
func ParseQuantity(text string) (int, error) {
	t := strings.TrimSpace(text)
	end := 0
	for end < len(t) && t[end] >= '0' && t[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(t[:end])
	if err != nil || n <= 0 || n > 999 {
		return 0, fmt.Errorf("invalid quantity %q", text)
	}
	return n, nil
}
EOF
cat >"$T/checkout-go/shipping/shipping.go" <<'EOF'
// Package shipping prices parcels by weight and zone.
package shipping

import "fmt"

type zone struct{ base, perKilo int64 }

var zones = map[string]zone{
	"domestic": {500, 120}, "eu": {900, 210}, "world": {1500, 380}, "remote": {2400, 650},
}

// Cost returns the shipping cost in cents for a parcel of grams to zone.
func Cost(grams int64, zoneName string) (int64, error) {
	z, ok := zones[zoneName]
	if !ok {
		return 0, fmt.Errorf("unknown shipping zone %q", zoneName)
	}
	kilos := (grams + 999) / 1000
	if zoneName == "remote" && grams < 2000 {
		return z.base, nil
	}
	extra := kilos - 1
	if extra < 0 {
		extra = 0
	}
	return z.base + extra*z.perKilo, nil
}
EOF
cat >"$T/checkout-go/gen_tests.py" <<'EOF'
# Writes the table-driven tests of the checkout module: python3 gen_tests.py AMOUNTS
import math, sys
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
RATES = {"AT": 0.2, "BE": 0.21, "DE": 0.19, "DK": 0.25, "ES": 0.21, "FI": 0.24, "FR": 0.2, "GB": 0.2,
         "IE": 0.23, "IT": 0.22, "NL": 0.21, "PL": 0.23, "PT": 0.23, "SE": 0.25, "JP": 0.1, "US_CA": 0.0725}
amounts = [((i * 7919) % 99000) + 199 + (i % 3) for i in range(N)] + [99999]
half_up = lambda x: int(math.floor(x + 0.5))
out = ["package tax", "", "import \"testing\"", ""]
for region in RATES:
    fn = "TestFor" + region.title().replace("_", "")
    out += [f"func {fn}(t *testing.T) {{", "\tcases := []struct {", "\t\tcents, want int64", "\t}{"]
    out += [f"\t\t{{{c}, {half_up(c * RATES[region])}}}," for c in amounts]
    out += ["\t}", "\tfor _, c := range cases {", "\t\tc := c",
            f"\t\tt.Run(fmtCents(c.cents), func(t *testing.T) {{",
            f"\t\t\tgot, err := For(\"{region}\", c.cents)",
            "\t\t\tif err != nil {", "\t\t\t\tt.Fatalf(\"For: %v\", err)", "\t\t\t}",
            "\t\t\tif got != c.want {", f"\t\t\t\tt.Errorf(\"For(%q, %d) = %d, want %d\", \"{region}\", c.cents, got, c.want)", "\t\t\t}",
            "\t\t})", "\t}", "}", ""]
out += ["func TestUnknownRegion(t *testing.T) {", "\tif _, err := For(\"XX\", 100); err == nil {", "\t\tt.Fatal(\"want an error for region XX\")", "\t}", "}", "",
        "func fmtCents(c int64) string {", "\tconst digits = \"0123456789\"", "\tif c == 0 {", "\t\treturn \"0\"", "\t}", "\ts := \"\"",
        "\tfor ; c > 0; c /= 10 {", "\t\ts = string(digits[c%10]) + s", "\t}", "\treturn s + \"c\"", "}", ""]
open("tax/tax_test.go", "w").write("\n".join(out))

money = lambda c, cur: f"{c} {cur}" if cur in ("JPY", "KRW") else f"{c // 100}.{c % 100:02d} {cur}"
out = ["package money", "", "import \"testing\"", "", "func TestFormat(t *testing.T) {", "\tcases := []struct {", "\t\tname     string", "\t\tcents    int64", "\t\tcurrency string", "\t\twant     string", "\t}{"]
for cur in ["EUR", "USD", "GBP", "SEK", "CHF"]:
    out += [f"\t\t{{\"{cur}_{c}\", {c}, \"{cur}\", \"{money(c, cur)}\"}}," for c in amounts[:8]]
out += [f"\t\t{{\"{cur}_{c}\", {c}, \"{cur}\", \"{money(c, cur)}\"}}," for c, cur in [(1500, "JPY"), (98000, "JPY"), (1234, "KRW")]]
out += ["\t}", "\tfor _, c := range cases {", "\t\tc := c", "\t\tt.Run(c.name, func(t *testing.T) {",
        "\t\t\tif got := Format(c.cents, c.currency); got != c.want {", "\t\t\t\tt.Errorf(\"Format(%d, %q) = %q, want %q\", c.cents, c.currency, got, c.want)", "\t\t\t}", "\t\t})", "\t}", "}", "",
        "func TestParseQuantity(t *testing.T) {"]
for q in ["1", "2", "7", "10", "25", "99", "250", "999", " 3", "4 ", "007"]:
    out += [f"\tt.Run(\"accepts_{q.strip()}\", func(t *testing.T) {{", f"\t\tif n, err := ParseQuantity(\"{q}\"); err != nil || n != {int(q)} {{",
            f"\t\t\tt.Errorf(\"ParseQuantity(%q) = %d, %v; want {int(q)}\", \"{q}\", n, err)", "\t\t}", "\t})"]
for q in ["0", "-1", "", "abc", "1000", "12abc"]:
    out += [f"\tt.Run(\"rejects_{q or 'empty'}\", func(t *testing.T) {{", f"\t\tif n, err := ParseQuantity(\"{q}\"); err == nil {{",
            f"\t\t\tt.Errorf(\"ParseQuantity(%q) = %d, want an error\", \"{q}\", n)", "\t\t}", "\t})"]
out += ["}", ""]
open("money/money_test.go", "w").write("\n".join(out))

ZONES = {"domestic": (500, 120), "eu": (900, 210), "world": (1500, 380), "remote": (2400, 650)}
out = ["package shipping", "", "import (", "\t\"fmt\"", "\t\"testing\"", ")", ""]
for zone, (base, per) in ZONES.items():
    out += [f"func TestCost{zone.title()}(t *testing.T) {{", "\tfor grams, want := range map[int64]int64{"]
    out += [f"\t\t{g}: {base + max(0, -(-g // 1000) - 1) * per}," for g in [100, 500, 999, 1000, 1001, 1500, 2500, 4000, 5000, 7500, 9999, 10000]]
    out += ["\t} {", "\t\tgrams, want := grams, want", "\t\tt.Run(fmt.Sprintf(\"%dg\", grams), func(t *testing.T) {",
            f"\t\t\tgot, err := Cost(grams, \"{zone}\")", "\t\t\tif err != nil || got != want {",
            f"\t\t\t\tt.Errorf(\"Cost(%d, {zone}) = %d, %v; want %d\", grams, got, err, want)", "\t\t\t}", "\t\t})", "\t}", "}", ""]
open("shipping/shipping_test.go", "w").write("\n".join(out))
EOF
python3 gen_tests.py "$AMOUNTS" && gofmt -w .
run go-test-v "$T/checkout-go" "GOFLAGS=-mod=mod GOPROXY=off go test -v ./..."

########################################################################################
# 4. Java: JUnit 5 console launcher (Debian's junit5 package)
########################################################################################
JUNIT=/usr/share/java/junit-platform-console-standalone.jar
mkdir -p "$T/checkout-java/src/com/example/checkout" "$T/checkout-java/test/com/example/checkout"
cat >"$T/checkout-java/src/com/example/checkout/Cart.java" <<'EOF'
package com.example.checkout;

import java.util.Map;

/** Cart arithmetic for the checkout service. Amounts are integer cents. */
public final class Cart {
    public static final Map<String, Double> TAX_RATES = Map.ofEntries(
            Map.entry("AT", 0.2), Map.entry("BE", 0.21), Map.entry("DE", 0.19), Map.entry("DK", 0.25),
            Map.entry("ES", 0.21), Map.entry("FI", 0.24), Map.entry("FR", 0.2), Map.entry("GB", 0.2),
            Map.entry("IE", 0.23), Map.entry("IT", 0.22), Map.entry("NL", 0.21), Map.entry("PL", 0.23),
            Map.entry("PT", 0.23), Map.entry("SE", 0.25), Map.entry("JP", 0.1), Map.entry("US_CA", 0.0725));

    private Cart() {}

    public static long taxFor(String region, long cents) {
        Double rate = TAX_RATES.get(region);
        if (rate == null) {
            throw new IllegalArgumentException("unknown tax region: " + region);
        }
        if (region.equals("FI") && cents > 90_000) {
            return (long) Math.floor(cents * rate);
        }
        return Math.round(cents * rate);
    }

    public static String formatMoney(long cents, String currency) {
        if (currency.equals("JPY")) {
            return cents + " " + currency;
        }
        return String.format("%d.%02d %s", cents / 100, cents % 100, currency);
    }

    public static int parseQuantity(String text) {
        String digits = text.strip().replaceAll("[^0-9].*$", "");
        int n = digits.isEmpty() ? 0 : Integer.parseInt(digits);
        if (n < 1 || n > 999) {
            throw new IllegalArgumentException("invalid quantity: \"" + text + "\"");
        }
        return n;
    }

    public static long shippingFor(long grams, String zone) {
        long[] z = switch (zone) {
            case "domestic" -> new long[] {500, 120};
            case "eu" -> new long[] {900, 210};
            case "world" -> new long[] {1500, 380};
            case "remote" -> new long[] {2400, 650};
            default -> throw new IllegalArgumentException("unknown shipping zone: " + zone);
        };
        if (zone.equals("remote") && grams < 2000) {
            return z[0];
        }
        long kilos = (grams + 999) / 1000;
        return z[0] + Math.max(0, kilos - 1) * z[1];
    }
}
EOF
cat >"$T/checkout-java/test/com/example/checkout/CartTest.java" <<'EOF'
package com.example.checkout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class CartTest {
    static final int AMOUNTS = Integer.getInteger("amounts", 20);

    static Stream<Arguments> taxCases() {
        return Cart.TAX_RATES.keySet().stream().sorted().flatMap(region -> LongStream
                .concat(LongStream.range(0, AMOUNTS).map(i -> (i * 7919) % 99_000 + 199 + i % 3), LongStream.of(99_999))
                .mapToObj(c -> Arguments.of(region, c, (long) Math.floor(c * Cart.TAX_RATES.get(region) + 0.5))));
    }

    @Nested
    @DisplayName("taxFor")
    class TaxFor {
        @ParameterizedTest(name = "{0}: {1} cents → {2}")
        @MethodSource("com.example.checkout.CartTest#taxCases")
        void taxesAtTheRegionRate(String region, long cents, long want) {
            assertEquals(want, Cart.taxFor(region, cents), () -> "tax for " + region + " on " + cents);
        }

        @Test
        void rejectsUnknownRegions() {
            assertThrows(IllegalArgumentException.class, () -> Cart.taxFor("XX", 100));
        }
    }

    @Nested
    @DisplayName("formatMoney")
    class FormatMoney {
        @ParameterizedTest(name = "{0} {1} → {2}")
        @CsvSource({"199,EUR,1.99 EUR", "8119,USD,81.19 USD", "16039,GBP,160.39 GBP", "23956,SEK,239.56 SEK",
                "31876,CHF,318.76 CHF", "1500,JPY,1500 JPY", "98000,JPY,98000 JPY", "1234,KRW,1234 KRW"})
        void formats(long cents, String currency, String want) {
            assertEquals(want, Cart.formatMoney(cents, currency));
        }
    }

    @Nested
    @DisplayName("parseQuantity")
    class ParseQuantity {
        @ParameterizedTest(name = "accepts \"{0}\"")
        @ValueSource(strings = {"1", "2", "7", "10", "25", "99", "250", "999", " 3", "007"})
        void accepts(String text) {
            assertEquals(Integer.parseInt(text.strip()), Cart.parseQuantity(text));
        }

        @ParameterizedTest(name = "rejects \"{0}\"")
        @ValueSource(strings = {"0", "-1", "", "abc", "1000", "12abc"})
        void rejects(String text) {
            assertThrows(IllegalArgumentException.class, () -> Cart.parseQuantity(text));
        }
    }

    @Nested
    @DisplayName("shippingFor")
    class ShippingFor {
        @ParameterizedTest(name = "{1}: {0} g → {2}")
        @CsvSource({"100,domestic,500", "1001,domestic,620", "5000,domestic,980", "100,eu,900", "2500,eu,1320",
                "100,world,1500", "9999,world,4920", "100,remote,2400", "1001,remote,3050", "1500,remote,3050",
                "2500,remote,3700", "10000,remote,8250"})
        void charges(long grams, String zone, long want) {
            assertEquals(want, Cart.shippingFor(grams, zone));
        }
    }
}
EOF
cd "$T/checkout-java" && javac -d out -cp "$JUNIT" src/com/example/checkout/*.java test/com/example/checkout/*.java
run junit-console-tree "$T/checkout-java" "java -Damounts=$AMOUNTS -jar $JUNIT --class-path out --select-class com.example.checkout.CartTest"

########################################################################################
# 5. Service logs under load
########################################################################################
cat >"$T/load.py" <<'EOF'
# Sends a fixed mix of requests to a base URL: python3 load.py URL N [kind]
import json, sys, urllib.request, urllib.error
base, n = sys.argv[1], int(sys.argv[2])
kind = sys.argv[3] if len(sys.argv) > 3 else "gateway"

def send(method, path, body=None, headers=None):
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    req = urllib.request.Request(base + path, data=data, method=method, headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()
    except urllib.error.HTTPError as e:
        e.read()
    except Exception:
        pass

for i in range(n):
    if kind == "gateway":
        m = i % 4
        if m == 0:
            send("POST", "/v1/chat/completions", {"model": "gpt-4.1", "messages": [{"role": "user", "content": f"order {i}"}]})
        elif m == 1:
            send("POST", "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": f"order {i}"}]})
        elif m == 2:
            send("POST", "/v1/responses", {"model": "gpt-5", "input": f"order {i}", "stream": True})
        else:
            send("POST", "/v1/chat/completions", {"model": "gpt-4.1-mini", "stream": True, "messages": [{"role": "user", "content": f"order {i}"}]})
        if i == n // 2:
            send("POST", "/v1/chat/completions", b'{"model": "gpt-4.1", "messages": [')
    else:  # web: a storefront's traffic
        send("GET", f"/api/orders/{1000 + i}")
        send("GET", "/healthz")
        if i % 10 == 0:
            send("GET", f"/static/app.{i % 3}.js")
        if i == n // 2:
            send("GET", "/api/orders/1077/invoice.pdf")
            send("POST", "/api/checkout", b'{"cart": 1077}')
EOF
# The Trimgate gateway at debug level in front of its mock provider (which answers every
# 37th request with a 529), with its data directory in the scratch dir. One request in the
# middle is malformed JSON.
cp "$repo/target/debug/trimgate" "$T/trimgate"
mkdir -p "$T/gw/home"
cat >"$T/gw/config.toml" <<'TOML'
[providers.mock]
kind = "openai_compatible"
base_url = "http://127.0.0.1:47811/v1"
dialects = ["chat", "messages", "responses"]

[[routes]]
match = "*"
provider = "mock"
TOML
cd "$T/gw"
"$T/trimgate" mock --listen 127.0.0.1:47811 --keyless --fail-status 529 --fail-every 37 >mock.log 2>&1 &
PIDS+=($!)
sleep 0.5
gw_cmd="TRIMGATE_LOG=debug trimgate serve --config config.toml --listen 127.0.0.1:47812"
HOME="$T/gw/home" XDG_DATA_HOME="$T/gw/home/data" XDG_CONFIG_HOME="$T/gw/home/config" TRIMGATE_LOG=debug \
  "$T/trimgate" serve --config config.toml --listen 127.0.0.1:47812 >gateway.log 2>&1 &
gw_pid=$!
PIDS+=($gw_pid)
sleep 2
python3 "$T/load.py" http://127.0.0.1:47812 800 gateway
sleep 1
kill "$gw_pid"; wait "$gw_pid" 2>/dev/null || true
run gateway-debug-log "$T/gw" "cat gateway.log   # $gw_cmd, under python3 load.py (800 requests)"
run gateway-debug-log-tail "$T/gw" "tail -n 300 gateway.log"

# nginx in front of a storefront: static files, an orders API answered by nginx itself,
# and a checkout upstream that is down. One missing invoice and one refused checkout sit in
# the middle of the traffic.
mkdir -p "$T/nginx/logs" "$T/nginx/html/static" "$T/nginx/html/api/orders"
for i in 0 1 2; do echo "console.log('app $i');" >"$T/nginx/html/static/app.$i.js"; done
cat >"$T/nginx/nginx.conf" <<'CONF'
worker_processes 2;
error_log logs/error.log info;
pid logs/nginx.pid;
events { worker_connections 256; }
http {
    access_log logs/access.log combined;
    server {
        listen 127.0.0.1:47813;
        root html;
        location = /healthz { return 200 "ok\n"; }
        location ~ ^/api/orders/\d+$ { default_type application/json; return 200 '{"status":"paid"}'; }
        location /api/checkout { proxy_pass http://127.0.0.1:47819; }
    }
}
CONF
nginx -p "$T/nginx" -c nginx.conf
sleep 0.5
python3 "$T/load.py" http://127.0.0.1:47813 700 web
nginx -p "$T/nginx" -c nginx.conf -s quit
sleep 1
run nginx-access-log "$T/nginx" "cat logs/access.log"
run nginx-error-log "$T/nginx" "cat logs/error.log"

# redis-server at verbose level with snapshots every second while clients connect, write
# and go; one client asks for a key of the wrong type in the middle.
mkdir -p "$T/redis"
cd "$T/redis"
redis-server --port 47814 --loglevel verbose --logfile "$T/redis/redis.log" --dir "$T/redis" --save "1 1" --daemonize no &
redis_pid=$!
PIDS+=($redis_pid)
sleep 0.5
for i in $(seq 1 300); do
  redis-cli -p 47814 SET "order:$i" paid >/dev/null
  if [[ $i -eq 150 ]]; then redis-cli -p 47814 CONFIG SET dir /nonexistent/redis >/dev/null || true; redis-cli -p 47814 BGSAVE >/dev/null || true; sleep 1.2; redis-cli -p 47814 CONFIG SET dir "$T/redis" >/dev/null; fi
  if (( i % 60 == 0 )); then sleep 1.1; fi
done
redis-cli -p 47814 SHUTDOWN >/dev/null 2>&1 || true
wait "$redis_pid" 2>/dev/null || true
run redis-server-log "$T/redis" "cat redis.log"

# PostgreSQL with every statement and connection logged; one query in the middle names a
# table that does not exist.
PG=/usr/lib/postgresql/15/bin
PGDATA_DIR="$T/pg/data"
mkdir -p "$T/pg" && chown postgres "$T/pg"
su postgres -c "$PG/initdb -D $PGDATA_DIR -A trust" >/dev/null
su postgres -c "$PG/pg_ctl -D $PGDATA_DIR -l $T/pg/pg.log -o '-p 47815 -k $T/pg -c log_connections=on -c log_disconnections=on -c log_statement=all -c log_duration=on -c log_line_prefix=\"%m [%p] %u@%d \"' start" >/dev/null
sleep 1
su postgres -c "psql -h $T/pg -p 47815 -qc 'CREATE TABLE orders (id int primary key, status text, cents int)' postgres"
for i in $(seq 1 200); do
  su postgres -c "psql -h $T/pg -p 47815 -qc \"INSERT INTO orders VALUES ($i, 'paid', $((i * 137 % 9000)))\" postgres"
  su postgres -c "psql -h $T/pg -p 47815 -qAtc \"SELECT status, cents FROM orders WHERE id = $i\" postgres" >/dev/null
  if [[ $i -eq 100 ]]; then su postgres -c "psql -h $T/pg -p 47815 -qc 'SELECT sum(cents) FROM invoices' postgres" >/dev/null 2>&1 || true; fi
done
su postgres -c "$PG/pg_ctl -D $PGDATA_DIR -m fast stop" >/dev/null
PGDATA_DIR=""
run postgres-log "$T/pg" "cat pg.log"

########################################################################################
# MANIFEST: this script's section, replaced as a whole.
########################################################################################
manifest="$OUT/MANIFEST.md"
drop_section "$manifest" "$SECTION"
{
  echo
  echo "$SECTION"
  echo
  echo "Written by \`bench/corpus/capture_runners.sh\` on $(uname -sm), node $(node --version), $(ruby --version | cut -d' ' -f1-2), $(go version | cut -d' ' -f3), $(java -version 2>&1 | head -1), $(nginx -v 2>&1), $(redis-server --version | cut -d' ' -f1-3), PostgreSQL $($PG/postgres --version | awk '{print $3}')."
  echo "Log outputs show the log file the server wrote while \`load.py\` (in the script) sent it traffic."
  echo
  cat "$ROWS"
} >>"$manifest"
