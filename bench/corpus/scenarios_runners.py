# Test runners beyond cargo and pytest (mocha, vitest, jest, rspec, go test, the JUnit 5
# console launcher) on one checkout library with the same four bugs, and the logs of real
# servers under load (the gateway itself, nginx, redis, PostgreSQL). Outputs come from
# capture_runners.sh. Needles are picked from the outputs: the failures a runner reports in
# the middle of hundreds of passing tests, and the few distinct lines in the middle of a log.
# Helpers (Scenario, Turn, bash, read, grep, output, strip_ansi, middle, OUTPUTS) are put in
# this module's namespace by build.py.
import re


def lines_of(name):
    return strip_ansi(output(name)).splitlines()


def matching(name, pattern, pick=None, line_has=""):
    """The stretches of lines free of colour codes that match `pattern`, one picked (the
    middle one by default): a needle is a plain substring of the output."""
    found = []
    for line in output(name).splitlines():
        if line_has not in line:
            continue
        for piece in re.split(r"\x1b\[[0-9;]*[A-Za-z]", line):
            if piece.strip() and re.search(pattern, piece.strip()):
                found.append(piece.strip())
    assert found, f"{name}: nothing matches {pattern!r}"
    return (pick or middle)(found)


def facts():
    f = {}
    # mocha: a failure from the numbered list, its assertion and its location.
    f["MOCHA_NEEDLES"] = [
        matching("mocha-spec-failures", r"^\d+\) charges \d+ for \d+ g$"),
        "AssertionError [ERR_ASSERTION]: Missing expected exception.",
        matching("mocha-spec-failures", r"at Context\.<anonymous> \(test/shipping-remote\.spec\.js:\d+:\d+\)"),
        "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:",
    ]
    f["RSPEC_PROGRESS_NEEDLES"] = [matching("rspec-progress", r"^\d+ examples, \d+ failures"),
                                   matching("rspec-progress", r"^rspec \./spec/cart_spec\.rb:\d+ # Cart\.format_money")]
    f["RSPEC_DOC_NEEDLES"] = [matching("rspec-documentation", r"\(FAILED - \d+\)$"),
                              matching("rspec-documentation", r"^got: \d+$"),
                              matching("rspec-documentation", r"^# \./spec/cart_spec\.rb:\d+:in")]
    f["GO_NEEDLES"] = [matching("go-test-v", r"^--- FAIL: TestCostRemote/\d+g"),
                       matching("go-test-v", r"tax_test\.go:\d+: For\(\"FI\""),
                       matching("go-test-v", r"^FAIL\texample\.com/checkout/money")]
    f["VITEST_NEEDLES"] = [matching("vitest-default-failures", r"^taxes \d+ cents at 0\.24$", line_has=" FAIL "),
                           ": expected 2400 to be 3050 // Object.is equality"]
    f["VITEST_VERBOSE_NEEDLES"] = [matching("vitest-verbose-failures", r'^rejects "12abc"$'),
                                   matching("vitest-verbose-failures", r"expected 23999 to be 24000")]
    f["JEST_VERBOSE_NEEDLES"] = [matching("jest-verbose-failures", r"taxFor FI › taxes \d+ cents at 0\.24"),
                                 matching("jest-verbose-failures", r"^jtest/shipping-remote\.test\.js$")]
    f["JEST_SUITES_NEEDLES"] = [matching("jest-many-suites", r"formatMoney › zero-decimal currencies › "),
                                matching("jest-many-suites", r"^Tests:")]
    f["JUNIT_NEEDLES"] = [matching("junit-console-tree", r'^rejects "12abc"$'),
                          matching("junit-console-tree", r"CartTest\$TaxFor\.taxesAtTheRegionRate\(CartTest\.java:\d+\)"),
                          matching("junit-console-tree", r"tests failed")]
    # Logs: the distinct lines in the middle, among thousands of repeated ones.
    f["GATEWAY_NEEDLES"] = [matching("gateway-debug-log", r"status=400"),
                            matching("gateway-debug-log", r"status=529 outcome=Retried")]
    f["NGINX_NEEDLES"] = [matching("nginx-access-log", r"\"GET /api/orders/1077/invoice\.pdf HTTP/1\.1\" 404"),
                          matching("nginx-access-log", r"\"POST /api/checkout HTTP/1\.1\" 502")]
    f["NGINX_ERROR_NEEDLES"] = [matching("nginx-error-log", r"connect\(\) failed \(111: Connection refused\)")]
    f["REDIS_NEEDLES"] = [matching("redis-server-log", r"Background saving"),
                          matching("redis-server-log", r"WARNING Memory overcommit")]
    f["POSTGRES_NEEDLES"] = [matching("postgres-log", r"ERROR:  relation \"invoices\" does not exist"),
                             matching("postgres-log", r"STATEMENT:  SELECT sum\(cents\) FROM invoices")]
    return f


SCENARIOS = [
    Scenario(
        "mocha-cart-fix", "large",
        "The cart tests are red under mocha. Run them, list each failure with its file and line, then check the Ruby port.",
        [
            Turn([bash("cd cart && npx mocha --reporter spec --color 'test/*.spec.js'", "mocha-spec-failures", "MOCHA_NEEDLES", error=True)]),
            Turn([bash("cd cart-rb && rspec", "rspec-progress", "RSPEC_PROGRESS_NEEDLES", error=True)],
                 user="Does the Ruby port fail the same way?"),
        ],
    ),
    Scenario(
        "go-vitest-cart", "large",
        "Run the Go checkout tests and tell me which subtests fail and why; then the vitest suite of the JS port.",
        [
            Turn([bash("cd checkout-go && go test -v ./...", "go-test-v", "GO_NEEDLES", error=True)]),
            Turn([bash("cd cart && npx vitest run --color", "vitest-default-failures", "VITEST_NEEDLES", error=True)]),
        ],
    ),
    Scenario(
        "junit-cart", "large",
        "The Java checkout tests fail under the JUnit console launcher. Which tests, with which messages and lines?",
        [
            Turn([bash("cd checkout-java && java -jar /usr/share/java/junit-platform-console-standalone.jar --class-path out --select-class com.example.checkout.CartTest",
                       "junit-console-tree", "JUNIT_NEEDLES", error=True)]),
            Turn([bash("cd cart-rb && rspec", "rspec-progress", "RSPEC_PROGRESS_NEEDLES", error=True)],
                 user="And the Ruby port?"),
        ],
    ),
    Scenario(
        "rspec-doc-cart", "large",
        "Run the Ruby specs with the documentation formatter and tell me which examples fail, then run the Go tests.",
        [
            Turn([bash("cd cart-rb && rspec --format documentation --force-color", "rspec-documentation", "RSPEC_DOC_NEEDLES", error=True)]),
            Turn([bash("cd cart && npx vitest run --color", "vitest-default-failures", "VITEST_NEEDLES", error=True)]),
        ],
    ),
    Scenario(
        "storefront-logs", "huge",
        "The storefront had errors this afternoon. Read the gateway's debug log and nginx's logs, and tell me what failed and when.",
        [
            Turn([bash("cat /var/log/trimgate/gateway.log", "gateway-debug-log", "GATEWAY_NEEDLES")]),
            Turn([bash("cat /var/log/nginx/access.log", "nginx-access-log", "NGINX_NEEDLES"),
                  bash("cat /var/log/nginx/error.log", "nginx-error-log", "NGINX_ERROR_NEEDLES")]),
            Turn([bash("cd cart && npx vitest run --color", "vitest-default-failures", "VITEST_NEEDLES", error=True)],
                 user="The checkout failure: do the JS tests show anything related?"),
        ],
    ),
    # Held out: captured and measured, never tuned on.
    Scenario(
        "jest-cart", "large",
        "Run the jest suites verbosely and tell me which tests fail; then check the Ruby port.",
        [
            Turn([bash("cd cart && npx jest --verbose --color", "jest-verbose-failures", "JEST_VERBOSE_NEEDLES", error=True)]),
            Turn([bash("cd cart-rb && rspec", "rspec-progress", "RSPEC_PROGRESS_NEEDLES", error=True)],
                 user="And the Ruby port?"),
        ],
        held_out=True,
    ),
    Scenario(
        "redis-log", "large",
        "Redis restarted during the load test. Read its log: did a background save fail, and what warnings did it print at start?",
        [
            Turn([bash("cat /var/log/redis/redis-server.log", "redis-server-log", "REDIS_NEEDLES")]),
        ],
        held_out=True,
    ),
    Scenario(
        "postgres-log", "huge",
        "Some query failed against the orders database. Find it in the PostgreSQL log and tell me which statement and error.",
        [
            Turn([bash("cat /var/log/postgresql/orders.log", "postgres-log", "POSTGRES_NEEDLES")]),
            Turn([bash("cat /var/log/redis/redis-server.log", "redis-server-log", "REDIS_NEEDLES")],
                 user="Did redis log anything at that time?"),
            Turn([bash("cat /var/log/nginx/access.log", "nginx-access-log", "NGINX_NEEDLES"),
                  bash("cd cart && npx jest --color", "jest-many-suites", "JEST_SUITES_NEEDLES", error=True)],
                 user="And nginx? Also: which jest suites fail right now?"),
        ],
        held_out=True,
    ),
]
