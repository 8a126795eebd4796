#!/usr/bin/python3
# test_pages_browser.py: every page of the console and the report in Debian's headless Chromium (chromium-driver, python3-selenium), 1280 px wide and as a phone 390 px wide.
#
# Four simulated runs: one finished, one whose colours wait for a person, one waiting for its first-motion
# approval, one braked by a camera that drops every frame (its heartbeat file then removed). Each page (the
# runs, each run, each report as the console serves it and as a copy of report.html alone opened from a
# file) is opened at both widths: the phone through Chromium's mobile emulation, so the page's viewport meta
# decides its layout width as on a phone. No page is wider than the screen, none logs a console error (a
# missing favicon, a picture the CSP refuses, a script error), every picture loads, every table fits. Then
# what the pages say: the run list's badges and counts as the runs have them, the journal in words with the
# raw event a click away, the homing request in words; and live: the waiting run approved and resumed from
# the console, its "resumed" message still there once the run is running, its canvas shown from its first
# look, before any checkpoint.
#
# usage: test_pages_browser.py BRUSHLOOP [--shots DIR]  (--shots: the screenshots for docs/, PNG)
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import SRC, check, click, finish, machine, wait_for  # noqa: E402

BRUSHLOOP = sys.argv[1]
SHOTS = sys.argv[sys.argv.index('--shots') + 1] if '--shots' in sys.argv else None
WIDTHS = (1280, 390)


def tight(m):
    m['tolerances']['mix_de00'] = 0.3
    m['camera']['repeat_observations'] = 0  # tighter than the camera repeats: no check
    m['unattended']['accept_within_de00'] = 0


def first_motion(m):
    m['safety']['confirm_first_motion'] = True


def make_runs(tmp):
    """The four runs, painted side by side; their exit statuses checked."""
    runs = os.path.join(tmp, 'runs')
    os.mkdir(runs)
    target = os.path.join(SRC, 'examples/targets/flat-shapes.png')
    plain = machine(tmp, 'm.json', lambda m: None)
    todo = {
        'finished': ([plain, '--accept-nearest'], 0),
        'colours-wait': ([machine(tmp, 'm-tight.json', tight)], 3),
        'first-motion': ([machine(tmp, 'm-first.json', first_motion)], 3),
        'camera-drops': ([plain, '--fault', 'drop_frames=1'], 4),
    }
    procs = {name: subprocess.Popen([BRUSHLOOP, 'run', target, '--out', os.path.join(runs, name), '--max-strokes', '24',
                                     '--quiet', '--machine', args[0], *args[1:]],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for name, (args, _) in todo.items()}
    for name, p in procs.items():
        rc = p.wait(timeout=600)
        check(rc == todo[name][1], f'run {name} exited {rc}, not {todo[name][1]}')
    # A folder whose heartbeat is gone: the list says none, not "0 s".
    os.unlink(os.path.join(runs, 'camera-drops', 'heartbeat'))
    return runs


def serve(runs):
    p = subprocess.Popen([BRUSHLOOP, 'serve', '--runs', runs, '--listen', '127.0.0.1:0'],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()
    url = p.stdout.readline().strip()
    return p, url


def browser(tmp, width):
    o = Options()
    for a in ('--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--hide-scrollbars',
              '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
              '--user-data-dir=' + tempfile.mkdtemp(dir=tmp, prefix='chromium-')):
        o.add_argument(a)
    if width < 600:
        # A phone: the layout width is what the page's viewport meta makes of the screen (980 px without one).
        o.add_experimental_option('mobileEmulation', {'deviceMetrics': {'width': width, 'height': 844, 'pixelRatio': 1}})
    else:
        o.add_argument(f'--window-size={width},900')
    o.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    o.binary_location = '/usr/bin/chromium'
    return webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=o)


LAYOUT = '''
const w = window.innerWidth, doc = document.documentElement;
const imgs = Array.from(document.images);
const wide = Array.from(document.querySelectorAll('table, img, svg, pre, section, figure'))
  .filter((e) => e.getBoundingClientRect().right > w + 1 && !e.closest('.tw, .plot, .scroll'))
  .map((e) => e.tagName + (e.id ? '#' + e.id : '') + ' ' + Math.round(e.getBoundingClientRect().right));
return {inner: w, scroll: doc.scrollWidth, images: imgs.length,
        loaded: imgs.filter((i) => i.complete && i.naturalWidth > 0).length, wide: wide.slice(0, 5)};
'''


def page_ok(d, what, width):
    """No horizontal overflow, no console error, every picture loaded, nothing wider than the screen."""
    wait_for(f'{what} loaded', lambda: d.execute_script('return document.readyState') == 'complete', 30)
    wait_for(f'{what} pictures', lambda: d.execute_script(
        'return Array.from(document.images).every((i) => i.complete)'), 20)
    lay = d.execute_script(LAYOUT)
    check(lay['inner'] == width, f'{what}: the layout is {lay["inner"]} px wide on a {width} px screen (no viewport?)')
    check(lay['scroll'] <= lay['inner'], f'{what} at {width} px: {lay["scroll"]} px wide, more than the screen')
    check(not lay['wide'], f'{what} at {width} px: wider than the screen: {lay["wide"]}')
    check(lay['loaded'] == lay['images'], f'{what} at {width} px: {lay["loaded"]} of {lay["images"]} pictures loaded')
    errors = [e['message'] for e in d.get_log('browser') if e['level'] == 'SEVERE']
    check(not errors, f'{what} at {width} px: console errors: {errors[:3]}')
    return lay


def shot(d, name, width):
    if SHOTS:
        d.save_screenshot(os.path.join(SHOTS, f'{name}-{width}.png'))


ROW = '''
return Array.from(document.querySelectorAll('table.runs tbody tr'))
  .filter((r) => Array.from(r.querySelectorAll('a')).some((a) => a.textContent === arguments[0]))
  .map((r) => r.innerText)[0] || '';
'''


def row_text(d, run, what='innerText'):
    # Read in the page: the list is drawn again every 3 s.
    if what == 'badges':
        return ' | '.join(d.execute_script(ROW.replace('.map((r) => r.innerText)[0]', ".map((r) => Array.from(r.querySelectorAll('.badge')).map((b) => b.textContent))[0]"), run) or [])
    return d.execute_script(ROW, run)


def runs_list(d, base, width):
    d.get(base + '/')
    wait_for('the runs listed', lambda: len(d.find_elements(By.CSS_SELECTOR, 'table.runs tbody tr')) == 4, 30)
    page_ok(d, 'the runs page', width)
    shot(d, 'console-runs', width)
    fin, colours, first, drops = (row_text(d, n) for n in ('finished', 'colours-wait', 'first-motion', 'camera-drops'))
    check('finished' in fin and not re.search(r'\b\d+/\d+\b(?! strokes)', fin),
          f'a finished run shows its strokes and that it finished, not the last round\'s counts: {fin!r}')
    badges = row_text(d, 'colours-wait', 'badges')
    check(re.search(r'\d+ subtasks? waits?', badges), f'a run whose subtasks wait has a badge saying so: {badges!r}')
    badges = row_text(d, 'first-motion', 'badges')
    check('1 question' in badges, f'a run waiting for an approval has a badge: {badges!r}')
    check('not observed yet' in drops and '0.00 p95' not in drops, f'a run never observed says so, no made-up 0.00: {drops!r}')
    check('heartbeat none' in drops and '0 s' not in drops, f'a folder with no heartbeat says none: {drops!r}')


def run_pages(d, base, width):
    for name in ('finished', 'colours-wait', 'first-motion', 'camera-drops'):
        d.get(f'{base}/run/{name}')
        wait_for(f'{name}: the journal', lambda: d.find_elements(By.CSS_SELECTOR, '#journal details'), 30)
        page_ok(d, f'the page of {name}', width)
        shot(d, f'console-{name}', width)
    # The journal in words, the raw event one click away.
    first = d.find_elements(By.CSS_SELECTOR, '#journal details')[0]
    check('process ended: braked' in first.text, f'the last event in words: {first.text!r}')
    check(not first.find_element(By.TAG_NAME, 'pre').is_displayed(), 'the raw event is folded')
    first.find_element(By.TAG_NAME, 'summary').click()
    raw = first.find_element(By.TAG_NAME, 'pre')
    check(raw.is_displayed() and json.loads(raw.text)['event'] == 'process_end', f'the raw event, a click away: {raw.text[:80]!r}')
    # The homing request of the run waiting for its first motion, in words.
    d.get(f'{base}/run/first-motion')
    card = wait_for('the homing request', lambda: d.find_elements(By.CSS_SELECTOR, '.request'), 30)[0]
    check('homing cycle' in card.text and '(0, 0, 0)' not in card.text and not re.search(r'zones\s*(\n|$)', card.text),
          f'the homing request says what it does: {card.text!r}')


def reports(d, base, runs, tmp, width):
    for name in ('finished', 'colours-wait', 'first-motion', 'camera-drops'):
        d.get(f'{base}/files/{name}/report.html')
        page_ok(d, f'the report of {name} (served)', width)
        # Copied alone, as mailed: every picture is in the file.
        alone = os.path.join(tmp, f'alone-{name}-{width}')
        os.mkdir(alone)
        shutil.copy(os.path.join(runs, name, 'report.html'), alone)
        d.get('file://' + os.path.join(alone, 'report.html'))
        lay = page_ok(d, f'the report of {name} copied alone', width)
        check(lay['images'] >= 1, f'the report of {name} shows its pictures ({lay["images"]})')
        shot(d, f'report-{name}', width)


def live(d, base, runs):
    """The waiting run approved and resumed from the console: the message stays; the canvas shows from the first look."""
    d.get(f'{base}/run/first-motion')
    said = 'const m = document.querySelector("#answers .msg"); return m ? m.textContent : ""'
    click(d, By.CSS_SELECTOR, 'button.yes', 'the approve button')
    wait_for('the answer', lambda: os.path.exists(os.path.join(runs, 'first-motion', 'approvals', 'r000001.answer.json')), 30)
    click(d, By.CSS_SELECTOR, 'button#resume', 'the resume button')
    wait_for('the resume message', lambda: 'resumed' in d.execute_script(said), 30)
    wait_for('the run running', lambda: d.execute_script('return document.body.dataset.state') == 'running', 60)
    said = d.execute_script(said)
    check('resumed (pid' in said, f'the "resumed" message stays once the run runs: {said!r}')

    def canvas_and_journal():
        src = d.execute_script('const e = document.getElementById("img-canvas"); return e && e.complete && e.naturalWidth ? e.src : null')
        return src and [json.loads(l)['event'] for l in open(os.path.join(runs, 'first-motion', 'journal.jsonl')) if l.endswith('\n')]
    events = wait_for('the canvas picture', canvas_and_journal, 120, 0.1)
    check('checkpoint' not in events, 'the canvas shows from the first look, before any checkpoint')
    click(d, By.CSS_SELECTOR, 'button#hold', 'the hold button')
    wait_for('the run held', lambda: d.execute_script('return document.body.dataset.state') == 'paused', 120)


def main():
    for tool in ('/usr/bin/chromium', '/usr/bin/chromedriver'):
        if not os.path.exists(tool):
            print(f'{tool} is missing: run scripts/install-deps', file=sys.stderr)
            return 1
    tmp = tempfile.mkdtemp(prefix='brushloop-pages-')
    srv = None
    try:
        runs = make_runs(tmp)
        srv, url = serve(runs)
        base = url.split('/?')[0]
        for width in WIDTHS + (0,):
            d = browser(tmp, width or WIDTHS[0])
            try:
                d.get(url)  # the token into the cookie
                if width:
                    runs_list(d, base, width)
                    run_pages(d, base, width)
                    reports(d, base, runs, tmp, width)
                else:
                    live(d, base, runs)  # last: it answers and resumes the waiting run
            finally:
                d.quit()
    except AssertionError as e:
        check(False, str(e))
    finally:
        if srv:
            srv.send_signal(2)
            check(srv.wait(timeout=60) == 0, 'serve exits 0 on SIGINT')
    return finish(tmp)


if __name__ == '__main__':
    sys.exit(main())
