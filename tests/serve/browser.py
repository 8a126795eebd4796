# browser.py: what the console's browser tests share: checks that count their failures, waiting for the page, the example machine edited.
import json
import os
import sys
import time

SRC = os.environ.get('BRUSHLOOP_SRC', os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_failures = [0]


def check(cond, what):
    """A check that may fail and the test goes on; failed() counts them."""
    if not cond:
        _failures[0] += 1
        print(f'FAIL: {what}', file=sys.stderr)
    return cond


def failed():
    return _failures[0]


def wait_for(what, fn, timeout_s=90.0, every_s=0.2):
    t = time.monotonic() + timeout_s
    while time.monotonic() < t:
        v = fn()
        if v:
            return v
        time.sleep(every_s)
    raise AssertionError(f'timed out ({timeout_s:.0f} s) waiting for {what}')


def machine(tmp, name, edit):
    """examples/machine-sim.json with its calibration found from anywhere, edited by edit(m), written to tmp/name."""
    m = json.load(open(os.path.join(SRC, 'examples/machine-sim.json')))
    for k in ('camera_profile', 'light_map'):
        m['calibration'][k] = os.path.join(SRC, 'examples', m['calibration'][k])
    edit(m)
    p = os.path.join(tmp, name)
    json.dump(m, open(p, 'w'))
    return p


def click(d, by, sel, what):
    """Clicks what (by, sel) finds; the pages are live, so an element redrawn between finding and clicking is found again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    for _ in range(10):
        try:
            wait_for(what, lambda: d.find_elements(by, sel), 30)[0].click()
            return
        except StaleElementReferenceException:
            time.sleep(0.2)
    # Redrawn faster than a loaded machine finds and clicks: both in one step in the page.
    find = {By.LINK_TEXT: 'document.evaluate("//a[normalize-space(.)=\'" + arguments[0] + "\']", document, null, '
                          'XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue',
            By.CSS_SELECTOR: 'document.querySelector(arguments[0])'}
    if by in find and d.execute_script('var e = ' + find[by] + '; if (e) { e.click(); return true; } return false;', sel):
        return
    raise AssertionError(f'{what}: redrawn under every click')


def finish(tmp):
    """The test's end: tmp removed when nothing failed (kept for a look otherwise), ok or the count, the exit status."""
    import shutil
    if failed() == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f'left for a look: {tmp}', file=sys.stderr)
    print('ok' if failed() == 0 else f'{failed()} failed')
    return 1 if failed() else 0
