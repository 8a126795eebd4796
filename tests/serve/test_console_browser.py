#!/usr/bin/python3
# test_console_browser.py: the console in a real browser (Debian's headless Chromium through chromium-driver and python3-selenium) over a running simulated run.
#
# A run on the example simulator whose every stir needs a person (safety.operator_kinds) paints
# attended, so its gate waits for an answer file as `brushloop approve` writes one. The browser
# opens the console's URL (the token moves into its cookie), opens the run, sees the first request
# with its preview, clicks Approve, and the waiting run goes on: its journal's `answer` event names
# the console. A grant given through the form lets the later stirs through; the canvas picture then
# changes as the run paints. Without the right token a request is 401, a cross-site POST 403; a read-only
# console shows no buttons and refuses POSTs.
#
# usage: test_console_browser.py BRUSHLOOP [CASE] [--screenshot FILE]
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import SRC, check, click, finish, machine, wait_for  # noqa: E402

BRUSHLOOP = sys.argv[1]
SHOT = sys.argv[sys.argv.index('--screenshot') + 1] if '--screenshot' in sys.argv else None


def stirs_ask(m):
    """Every stir asks a person, who has ten minutes to answer."""
    m['safety']['operator_kinds'] = ['stir']
    m['safety']['operator_timeout_s'] = 600


def serve(runs, *extra):
    p = subprocess.Popen([BRUSHLOOP, 'serve', '--runs', runs, '--listen', '127.0.0.1:0', *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    url = p.stdout.readline().strip()
    check(re.match(r'^http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}$', url), f'serve printed {url!r}')
    return p, url


def stop(p):
    p.send_signal(2)  # SIGINT: the console stops cleanly, exit 0
    check(p.wait(timeout=20) == 0, 'serve exits 0 on SIGINT')


def browser(tmp):
    o = Options()
    for a in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
              '--disable-background-networking', '--disable-component-update', '--disable-sync',
              '--disable-dev-shm-usage', '--window-size=1400,1700',
              '--user-data-dir=' + tempfile.mkdtemp(dir=tmp, prefix='chromium-')):
        o.add_argument(a)
    o.binary_location = '/usr/bin/chromium'
    return webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=o)


def http(url, method='GET', body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def journal(run):
    p = os.path.join(run, 'journal.jsonl')
    if not os.path.exists(p):
        return []
    out = []
    for line in open(p):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def canvas_src(d):
    # Read in the page: the element is replaced whenever a new picture comes.
    return d.execute_script('const e = document.getElementById("img-canvas"); return e ? e.getAttribute("src") : null')


def live_run(tmp):
    runs = os.path.join(tmp, 'runs')
    os.mkdir(runs)
    run = os.path.join(runs, 'stirs')
    p, url = serve(runs)
    base = url.split('/?')[0]
    token = url.split('token=')[1]
    painter = subprocess.Popen([BRUSHLOOP, 'run', os.path.join(SRC, 'examples/targets/flat-shapes.png'),
                                '--out', run, '--machine', machine(tmp, 'machine-stirs-ask.json', stirs_ask), '--max-strokes', '150',
                                '--attended', '--quiet'],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = browser(tmp)
    try:
        # Without the token, or with a wrong one: 401 (the browser's first page, and a script's).
        check(http(base + '/') == 401, 'a request without the token is 401')
        check(http(base + '/api/runs', headers={'Authorization': 'Bearer ' + '0' * 64}) == 401, 'a wrong token is 401')
        d.get(url)
        check('token=' not in d.current_url, f'the token left the address bar ({d.current_url})')
        cookies = {c['name']: c for c in d.get_cookies()}
        check('bl_token' in cookies and cookies['bl_token']['httpOnly'] and cookies['bl_token'].get('sameSite') == 'Strict',
              f'the token is an HttpOnly SameSite=Strict cookie ({cookies.get("bl_token")})')
        wait_for('the run on the runs page', lambda: d.find_elements(By.LINK_TEXT, 'stirs'), 60)
        click(d, By.LINK_TEXT, 'stirs', 'the run on the runs page')  # the list is redrawn every 3 s
        wait_for('the run page', lambda: d.find_elements(By.ID, 'progress') and 'stirs' in d.title + d.find_element(By.ID, 'crumb').text)
        # The first stir waits: its request, its preview and its reasons are on the page.
        btn = wait_for('a pending approval', lambda: d.find_elements(By.CSS_SELECTOR, 'button.yes'), 120)[0]
        rid = btn.get_attribute('id').split('-', 1)[1]
        card = d.find_element(By.ID, 'req-' + rid)
        check('stir' in card.text and 'operator' in card.text.lower(), f'the request says what and why: {card.text!r}')
        check(card.find_elements(By.CSS_SELECTOR, 'img.preview'), 'the request shows its preview picture')
        before = len(journal(run))
        btn.click()
        ans = wait_for('the answer in the journal', lambda: [e for e in journal(run) if e.get('event') == 'answer' and e['data'].get('request') == rid], 30)[0]
        check(ans['data']['answer'] == 'yes' and ans['data']['by'].startswith('console (client 127.0.0.1:'),
              f'the journal says the console answered: {ans["data"]}')
        wait_for('the run going on after the answer', lambda: any(e.get('event') == 'execute' or e.get('event') == 'decision'
                                                                    for e in journal(run)[before + 1:]), 30)
        # A grant for the rest of the stirs, through the form.
        # The form is found afresh for the click: under load the page may redraw it between finding and
        # clicking. What the form said is kept for the failure message.
        gpath = os.path.join(run, 'grants.json')
        said = ''
        for _ in range(3):
            form = d.find_element(By.CSS_SELECTOR, 'form.grant')
            try:
                form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
            except Exception as e:  # stale or covered: the next round finds it again
                said = f'click failed: {e.__class__.__name__}'
                continue
            try:
                wait_for('the grant', lambda: os.path.exists(gpath), 30)
                break
            except AssertionError:
                said = d.execute_script('const m = document.querySelector("form.grant .msg"); return m ? m.textContent : "no form"')
                if said:
                    break  # the console answered without writing a grant: that is a failure, not a redraw
        if not os.path.exists(gpath):
            raise AssertionError(f'the grant form wrote no grants.json (the form said {said!r})')
        g = json.load(open(os.path.join(run, 'grants.json')))
        check(g['grants'][0]['by'].startswith('console (client'), f'the grant says the console gave it: {g["grants"][0]}')
        # The grant runs on the run's clock (the simulator's is fast): later stirs are approved as they come, by click.
        def approve_all():
            for b in d.find_elements(By.CSS_SELECTOR, 'button.yes'):
                try:
                    b.click()
                except Exception:
                    pass  # redrawn meanwhile: the next round finds it
        def first_canvas():
            approve_all()
            return canvas_src(d)
        first = wait_for('a canvas picture', first_canvas, 240, 0.5)
        def changed():
            approve_all()
            s = canvas_src(d)
            return s if s and s != first else None
        second = wait_for('the canvas picture to change as the run paints', changed, 300, 0.5)
        if SHOT:
            # A screenshot (--screenshot FILE): the painted canvas and a question waiting, when one comes within a minute.
            try:
                wait_for('a question to show', lambda: d.find_elements(By.CSS_SELECTOR, 'button.yes'), 60, 0.2)
                time.sleep(1.0)
            except AssertionError:
                pass
            d.save_screenshot(SHOT)
            approve_all()
        check(first != second, 'the canvas picture changed')
        # The picture is cut from canvas-latest.png on request (canvas.png): it may take a moment under a sanitizer.
        try:
            wait_for('the canvas picture to load', lambda: d.execute_script(
                'const e = document.getElementById("img-canvas"); return e && e.complete && e.naturalWidth > 0'), 30)
        except AssertionError:
            check(False, 'the canvas picture loads')
        # A cross-site POST with the browser's cookie is refused (the request is sent from another origin's page).
        cross = http(base + '/api/runs/stirs/approve', 'POST', b'{"id": "r000001", "answer": "yes"}',
                     {'Content-Type': 'application/json', 'Cookie': 'bl_token=' + token,
                      'Origin': 'http://evil.example', 'Host': base.split('//')[1]})
        check(cross == 403, f'a cross-site POST is 403 (got {cross})')
        # The page was never reloaded: the same document got its changes by events.
        check(d.execute_script('return performance.getEntriesByType("navigation").length') == 1, 'one navigation')
        # The rest of the run is not this test's: it is held (SIGINT, as a first Ctrl-C) and pauses.
        painter.send_signal(2)
        rc = painter.wait(timeout=120)
        check(rc == 3, f'the run, held, paused (exit {rc}, not 3)')
    finally:
        if painter.poll() is None:
            painter.kill()
            painter.wait()
        d.quit()
        stop(p)
    return runs


def read_only(tmp, runs):
    p, url = serve(runs, '--read-only')
    base = url.split('/?')[0]
    token = url.split('token=')[1]
    d = browser(tmp)
    try:
        d.get(url)
        wait_for('the runs page', lambda: d.find_elements(By.LINK_TEXT, 'stirs'), 30)
        d.get(base + '/run/stirs')
        wait_for('the run page drawn', lambda: d.find_elements(By.CSS_SELECTOR, '#subtasks table'), 30)
        time.sleep(1)
        n = len(d.find_elements(By.CSS_SELECTOR, 'button, form, input'))
        check(n == 0, f'a read-only console shows no buttons, forms or inputs ({n})')
        s = http(base + '/api/runs/stirs/grant', 'POST', b'{"kinds": "stir", "zones": "palette", "max_speed": "100", "for": "1m"}',
                 {'Content-Type': 'application/json', 'Cookie': 'bl_token=' + token,
                  'Origin': base, 'Host': base.split('//')[1]})
        check(s == 403, f'a read-only console refuses a POST from its own page (got {s})')
    finally:
        d.quit()
        stop(p)


def main():
    for tool in ('/usr/bin/chromium', '/usr/bin/chromedriver'):
        if not os.path.exists(tool):
            print(f'{tool} is missing: run scripts/install-deps', file=sys.stderr)
            return 1
    tmp = tempfile.mkdtemp(prefix='brushloop-console-')
    try:
        runs = live_run(tmp)
        read_only(tmp, runs)
    except AssertionError as e:
        check(False, str(e))
    return finish(tmp)


if __name__ == '__main__':
    sys.exit(main())
