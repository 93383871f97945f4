"""The web UI in headless Chromium, as a user drives it.

``llamp ui`` is started on an empty store on a free loopback port; the Sweep3D trace is
uploaded through the Runs page's form; the Latency page's 1% L tolerance must equal what
``llamp tolerance RUN --json`` prints for the same stored run. Screenshots of every page go to
``tests/output/ui/`` for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from store_graphs import wipe

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip(
        "headless browser test needs Debian's chromium and chromium-driver "
        f"({CHROMIUM}, {CHROMEDRIVER}): apt-get install -y chromium chromium-driver",
        allow_module_level=True,
    )
pytest.importorskip(
    "selenium", reason="the browser test drives Chromium with selenium (pip install selenium)"
)

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def _exact_ns(caption: str) -> float:
    """The nanoseconds of a metric's caption, ``"exact: 41,909,063,157.385979 ns"``."""
    from llamp.ui.display import parse_exact

    return parse_exact(caption.removeprefix("exact: "))


SWEEP3D = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"
SHOTS = Path(__file__).parent / "output" / "ui"
#: The llamp executable under test: $LLAMP_CLI, else the console script beside this Python.
LLAMP = Path(os.environ.get("LLAMP_CLI") or Path(sys.executable).with_name("llamp"))
RUN = "sweep3d-upload"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    url: str
    env: dict[str, str]
    log: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory, ui_store):
    """``llamp ui`` on an empty store: embedded in a temporary LLAMP_HOME, or ``ui_store``."""
    home = tmp_path_factory.mktemp("llamp-home")
    port = _free_port()
    env = {**os.environ, "LLAMP_HOME": str(home)}
    env["LLAMP_UI_SERVER_ROOTS"] = str(SWEEP3D.resolve().parent)  # "Path on the server" is opt-in
    env.pop("LLAMP_STORE", None)
    if ui_store is not None:
        wipe(ui_store)
        env["LLAMP_STORE"] = ui_store
    log = home / "ui.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(LLAMP), "ui", "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            pytest.fail(f"llamp ui exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.terminate()
            pytest.fail(f"llamp ui did not answer on {url} within 90 s:\n{log.read_text()}")
        time.sleep(0.5)
    _LOG.append(log)
    yield Server(url, env, log)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
        "--window-size=1500,2300",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _wait(driver, condition, timeout: float = 90, what: str = ""):
    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.25).until(condition)
    except TimeoutException:
        SHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SHOTS / "timeout.png"))
        raise AssertionError(
            f"timed out waiting for {what} (screenshot: {SHOTS / 'timeout.png'})\n"
            f"--- page text (end):\n{_page_text(driver)[-1500:]}\n"
            f"--- server log (end):\n{_server_log()[-3000:]}"
        ) from None


#: The running server's log, quoted when a wait times out (CI keeps no screenshot).
_LOG: list[Path] = []


def _page_text(driver) -> str:
    try:
        return driver.find_element(By.TAG_NAME, "body").text
    except Exception as err:  # noqa: BLE001 - a diagnostic, never the failure itself
        return f"(no page text: {err!r})"


def _server_log() -> str:
    return _LOG[-1].read_text(errors="replace") if _LOG and _LOG[-1].exists() else "(no log)"


def _css(driver, selector: str, what: str, timeout: float = 90):
    return _wait(driver, EC.presence_of_element_located((By.CSS_SELECTOR, selector)), timeout, what)


def _idle(driver, timeout: float = 120) -> None:
    """Wait until Streamlit has finished running the script (no 'Running…' indicator)."""
    time.sleep(0.5)
    _wait(
        driver,
        lambda d: not d.find_elements(By.CSS_SELECTOR, '[data-testid="stStatusWidget"]'),
        timeout,
        "the script run to finish",
    )


def _uploaded(driver, count: int) -> None:
    """Wait until ``count`` files are uploaded (chips shown, no upload spinner)."""
    _wait(
        driver,
        lambda d: (
            len(d.find_elements(By.CSS_SELECTOR, '[data-testid="stFileChip"]')) == count
            and not d.find_elements(By.CSS_SELECTOR, '[data-testid="stFileChipIconSpinner"]')
        ),
        60,
        f"{count} uploaded files",
    )
    _idle(driver)


def _ingest_outcome(driver) -> str | bool:
    """The text of the ingest's success or error message, once there is one."""
    for alert in driver.find_elements(By.CSS_SELECTOR, '[data-testid="stAlert"]'):
        text = alert.text.strip()
        if text.startswith(("Stored run", "Ingest")):
            return text
    return False


def _button(driver, label: str):
    xpath = f"//button[.//p[normalize-space()={json.dumps(label)}]]"
    return _wait(driver, EC.element_to_be_clickable((By.XPATH, xpath)), 60, f"button {label!r}")


def _open_page(driver, slug: str, ready: str) -> None:
    link = _css(driver, f'a[data-testid="stSidebarNavLink"][href$="/{slug}"]', f"nav link {slug}")
    link.click()
    _css(driver, ready, f"the {slug} page")
    _idle(driver)


def _plots_drawn(driver, count: int) -> None:
    _wait(
        driver,
        lambda d: len(d.find_elements(By.CSS_SELECTOR, ".js-plotly-plot .main-svg")) >= count,
        90,
        f"{count} Plotly charts",
    )


def _no_traceback(driver) -> None:
    text = driver.find_element(By.TAG_NAME, "body").text
    assert "Traceback" not in text
    assert not driver.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')


def _shot(driver, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    time.sleep(1.5)  # let Plotly and the data grids finish painting
    path = SHOTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def test_upload_latency_tolerance_matches_cli(server, browser):
    """Upload Sweep3D, open Latency, and compare the 1% L tolerance with the CLI's."""
    driver = browser
    driver.get(server.url)
    upload = _css(driver, 'input[data-testid="stFileUploaderDropzoneInput"]', "the upload input")
    files = sorted(SWEEP3D.glob("pmpi-trace-rank-*.txt"))
    assert len(files) == 4
    upload.send_keys("\n".join(str(f.resolve()) for f in files))
    _uploaded(driver, len(files))
    name = _css(driver, 'input[aria-label="Run name"]', "the run name input")
    name.send_keys(RUN + Keys.ENTER)
    _idle(driver)
    _button(driver, "Ingest").click()
    outcome = _wait(driver, _ingest_outcome, 180, "the ingest to finish")
    assert f"Stored run {RUN!r}" in outcome, outcome
    _css(driver, '[data-testid="stDataFrame"]', "the runs table")
    _idle(driver)
    _no_traceback(driver)
    _shot(driver, "runs")

    _open_page(driver, "latency", ".st-key-tolerance-L-1pct")
    _plots_drawn(driver, 2)
    _no_traceback(driver)
    box = driver.find_element(By.CSS_SELECTOR, ".st-key-tolerance-L-1pct")
    label = box.find_element(By.CSS_SELECTOR, '[data-testid="stMetricLabel"]').text
    assert "1% L tolerance" in label
    exact = box.find_element(By.CSS_SELECTOR, '[data-testid="stCaptionContainer"]').text
    assert exact.startswith("exact: ") and exact.endswith(" ns"), exact
    shown_ns = _exact_ns(exact)
    _shot(driver, "latency")

    cli = subprocess.run(
        [str(LLAMP), "tolerance", RUN, "--json"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    levels = {round(t["x"], 6): t["latency_ns"] for t in json.loads(cli.stdout)["latency"]}
    assert shown_ns == pytest.approx(levels[0.01], rel=1e-12, abs=1e-5)

    _open_page(driver, "critical_path", ".st-key-path-runtime")
    _plots_drawn(driver, 3)
    _no_traceback(driver)
    _shot(driver, "critical_path")

    _open_page(driver, "cypher", 'textarea[aria-label="Query"]')
    _button(driver, "Rank-pair traffic").click()
    _wait(
        driver,
        lambda d: (
            "count(*) AS messages"
            in d.find_element(By.CSS_SELECTOR, 'textarea[aria-label="Query"]').get_attribute(
                "value"
            )
        ),
        60,
        "the example query in the text area",
    )
    _idle(driver)
    _button(driver, "Run query").click()
    _wait(
        driver,
        EC.presence_of_element_located((By.XPATH, "//*[contains(text(), 'rows × 4 columns')]")),
        60,
        "the query result",
    )
    _css(driver, '[data-testid="stDataFrame"]', "the result table")
    _no_traceback(driver)
    _shot(driver, "cypher")


def test_bad_upload_is_a_readable_error(server, browser):
    """A broken rank file gives an error naming the file, never a stack trace."""
    driver = browser
    driver.get(server.url)
    upload = _css(driver, 'input[data-testid="stFileUploaderDropzoneInput"]', "the upload input")
    bad = Path(server.env["LLAMP_HOME"]) / "bad" / "pmpi-trace-rank-0.txt"
    bad.parent.mkdir(exist_ok=True)
    bad.write_text("this is not a liballprof trace\n")
    upload.send_keys(str(bad))
    _uploaded(driver, 1)
    _css(driver, 'input[aria-label="Run name"]', "the run name input").send_keys(
        "broken" + Keys.ENTER
    )
    _idle(driver)
    _button(driver, "Ingest").click()
    outcome = _wait(driver, _ingest_outcome, 120, "the ingest error")
    assert outcome.startswith("Ingest"), outcome
    assert "pmpi-trace-rank-0.txt" in outcome, outcome
    _no_traceback(driver)
    _shot(driver, "runs_bad_upload")


def _radio(driver, label: str):
    xpath = f"//div[@role='radiogroup']//label[normalize-space(.)={json.dumps(label)}]"
    return _wait(driver, EC.element_to_be_clickable((By.XPATH, xpath)), 60, f"radio {label!r}")


def test_application_what_if_pages(server, browser):
    """Collectives what-if, classification and variability on Sweep3D ingested from its
    directory on the server (so the collectives page can re-read the trace)."""
    from llamp.lp import compare_collectives
    from llamp.params import LogGPS

    driver = browser
    driver.get(server.url)
    _css(driver, 'input[data-testid="stFileUploaderDropzoneInput"]', "the Runs page")
    _idle(driver)
    _radio(driver, "Path on the server").click()
    path = _css(driver, 'input[aria-label="Path on the server"]', "the server path input")
    path.send_keys(str(SWEEP3D.resolve()) + Keys.ENTER)
    _idle(driver)
    _css(driver, 'input[aria-label="Run name"]', "the run name input").send_keys(
        "sweep3d-path" + Keys.ENTER
    )
    _idle(driver)
    _button(driver, "Ingest").click()
    outcome = _wait(driver, _ingest_outcome, 180, "the ingest to finish")
    assert "Stored run 'sweep3d-path'" in outcome, outcome
    _idle(driver)

    _open_page(driver, "collectives", ".st-key-variant-1")
    _plots_drawn(driver, 2)
    _no_traceback(driver)
    exact = driver.find_element(
        By.CSS_SELECTOR, '.st-key-variant-1 [data-testid="stCaptionContainer"]'
    ).text
    ring = ",".join(
        f"{op}={alg}"
        for op, alg in sorted(
            {"allreduce": "ring", "barrier": "dissemination", "bcast": "binomial"}.items()
        )
    )
    api = compare_collectives(SWEEP3D, [ring], LogGPS(), [LogGPS().L]).summary
    assert _exact_ns(exact) == pytest.approx(api["runtime_ns"][0], abs=1e-5)
    _shot(driver, "collectives")
    _radio(driver, "One row per variant (Fig. 10)").click()
    _idle(driver)
    _plots_drawn(driver, 4)
    _no_traceback(driver)
    _shot(driver, "collectives_fig10")

    _open_page(driver, "classification", ".st-key-class-label")
    _plots_drawn(driver, 2)
    _no_traceback(driver)
    label = driver.find_element(
        By.CSS_SELECTOR, '.st-key-class-label [data-testid="stMetricValue"]'
    )
    assert label.text == "computation-bound"
    _shot(driver, "classification")

    _open_page(driver, "variability", 'input[aria-label="Samples"]')
    _button(driver, "Run Monte Carlo").click()
    _css(driver, ".st-key-mc-T-p50", "the Monte Carlo results", timeout=180)
    _idle(driver)
    _plots_drawn(driver, 3)
    _no_traceback(driver)
    _shot(driver, "variability")


NETWORK_RUN = "sweep3d-network"


def _type_into(driver, label: str, value: str) -> None:
    """Replace the text of the input labelled ``label`` and submit it."""
    box = _css(driver, f"input[aria-label={json.dumps(label)}]", f"the {label!r} input")
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(value + Keys.ENTER)
    _idle(driver)


def _tall_shot(driver, name: str) -> Path:
    """A screenshot of the whole page: the window is made as tall as the main area's content."""
    width, height = driver.get_window_size().values()
    content = driver.execute_script(
        "const m = document.querySelector('[data-testid=\"stMain\"]');"
        "return m ? m.scrollHeight : document.body.scrollHeight;"
    )
    driver.set_window_size(width, max(height, min(int(content) + 200, 9000)))
    try:
        time.sleep(1.0)
        return _shot(driver, name)
    finally:
        driver.set_window_size(width, height)


def test_network_pages(server, browser):
    """Topology what-if, sensitivity matrices and placement on Sweep3D stored by ``llamp
    ingest``: the topology page's T and the placement's rankfile equal what ``llamp topology``
    and ``llamp place`` print for the same run; screenshots of the three pages."""
    from llamp.lp.placement import format_mapping

    ingest = subprocess.run(
        [str(LLAMP), "ingest", str(SWEEP3D), "--name", NETWORK_RUN, "--replace"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ingest.returncode == 0, ingest.stderr
    driver = browser
    driver.get(server.url)
    _css(driver, '[data-testid="stDataFrame"]', "the runs table")
    _idle(driver)

    _open_page(driver, "topology", ".st-key-topo-runtime-1")
    caption = driver.find_element(By.CSS_SELECTOR, '[data-testid="stMain"]').text
    assert f"Run {NETWORK_RUN} ·" in caption  # the first run by name, so the one chosen
    _plots_drawn(driver, 2)
    _no_traceback(driver)
    specs = ["fattree:k=16,tiers=3", "dragonfly:g=8,a=4,p=8"]
    cli = subprocess.run(
        [str(LLAMP), "topology", NETWORK_RUN, *specs, "--json"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    for i, expected in enumerate(json.loads(cli.stdout)["topologies"]):
        box = driver.find_element(By.CSS_SELECTOR, f".st-key-topo-runtime-{i}")
        assert box.find_element(By.CSS_SELECTOR, '[data-testid="stMetricLabel"]').text == specs[i]
        exact = box.find_element(By.CSS_SELECTOR, '[data-testid="stCaptionContainer"]').text
        assert _exact_ns(exact) == pytest.approx(expected["runtime_ns"], rel=1e-12, abs=1e-5)
    _tall_shot(driver, "topology")

    _open_page(driver, "matrices", ".st-key-mx-runtime")
    _plots_drawn(driver, 2)
    _no_traceback(driver)
    _tall_shot(driver, "matrices")

    _open_page(driver, "placement", 'input[aria-label="Ranks per node"]')
    _type_into(driver, "Ranks per node", "3")  # 2 nodes × 3 slots: the heuristic moves a rank
    _button(driver, "Run placement").click()
    _css(driver, ".st-key-place-runtime-llamp", "the placement results", timeout=180)
    _idle(driver)
    _plots_drawn(driver, 1)
    _no_traceback(driver)
    cli = subprocess.run(
        [
            str(LLAMP),
            "place",
            NETWORK_RUN,
            "--intra",
            "300ns,0.05ns/B",
            "--inter",
            "3us,0.018ns/B",
            "--ranks-per-node",
            "3",
            "--json",
        ],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    placed = json.loads(cli.stdout)
    rankfile = format_mapping(
        placed["node_of_rank"][placed["best"]], placed["hostnames"], "openmpi"
    )
    shown = driver.find_element(By.CSS_SELECTOR, '[data-testid="stCode"] code').text
    assert shown.strip() == rankfile.strip()
    _tall_shot(driver, "placement")


BCAST = SWEEP3D.parent / "bcast-synthetic"
#: Two runs whose names sort before every other run of this module, so the Compare runs page
#: opens on them (the sidebar's run is the first by name, the second is the next one).
COMPARED = ("cmp-a-bcast", "cmp-b-sweep3d")


def test_compare_page(server, browser, tmp_path):
    """Two runs stored by ``llamp ingest``: the Compare runs page's "what changed" and runtimes
    equal ``llamp compare A B --json``; its HTML download is self-contained."""
    for name, trace in zip(COMPARED, (BCAST, SWEEP3D), strict=True):
        ingest = subprocess.run(
            [str(LLAMP), "ingest", str(trace), "--name", name, "--replace"],
            env=server.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ingest.returncode == 0, ingest.stderr
    cli = subprocess.run(
        [str(LLAMP), "compare", *COMPARED, "--json"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)

    driver = browser
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    driver.execute_cdp_cmd(
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    driver.get(server.url)
    _css(driver, '[data-testid="stDataFrame"]', "the runs table")
    _idle(driver)
    _open_page(driver, "compare", ".st-key-cmp-summary")
    _plots_drawn(driver, 3)
    _no_traceback(driver)
    shown = driver.find_element(By.CSS_SELECTOR, ".st-key-cmp-summary").text.strip()
    assert shown == expected["summary"][0], (shown, expected["summary"])
    for i, run in enumerate(expected["runs"]):
        box = driver.find_element(By.CSS_SELECTOR, f".st-key-cmp-runtime-{i}")
        exact = box.find_element(By.CSS_SELECTOR, '[data-testid="stCaptionContainer"]').text
        assert _exact_ns(exact) == pytest.approx(run["predict"]["runtime_ns"], rel=1e-12, abs=1e-5)
    _tall_shot(driver, "compare")

    _button(driver, "Download the comparison (HTML)").click()
    target = downloads / f"{COMPARED[0]}-vs-{COMPARED[1]}.html"
    _wait(driver, lambda d: target.is_file() and target.stat().st_size > 0, 60, "the download")
    page = target.read_text()
    assert page.startswith("<!DOCTYPE html>") and "http" not in page
    assert expected["summary"][0].split(":")[0] in page


def _ensure_run(server) -> None:
    """At least one stored run (these tests also run on their own)."""
    ingest = subprocess.run(
        [str(LLAMP), "ingest", str(SWEEP3D), "--name", "sweep3d-links", "--replace"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ingest.returncode == 0, ingest.stderr


def test_long_analysis_can_be_cancelled(server, browser):
    """A Monte Carlo of a million samples runs in the background with a progress bar; Cancel
    stops it and the page says so."""
    _ensure_run(server)
    driver = browser
    driver.get(server.url)
    _css(driver, '[data-testid="stDataFrame"]', "the runs table")
    _idle(driver)
    _open_page(driver, "variability", 'input[aria-label="Samples"]')
    _type_into(driver, "Samples", "1000000")
    _button(driver, "Run Monte Carlo").click()
    panel = _css(driver, ".st-key-task-variability", "the progress panel", timeout=120)
    _wait(
        driver,
        lambda d: "%" in d.find_element(By.CSS_SELECTOR, ".st-key-task-variability").text,
        120,
        "a percentage in the progress text",
    )
    assert "Monte Carlo" in panel.text
    _shot(driver, "task_running")
    _button(driver, "Cancel").click()
    _css(driver, ".st-key-task-cancelled-variability", "the cancelled message", timeout=60)

    def cancelled_text(d):  # the rerun may fill the keyed container a moment after it appears
        text = d.find_element(By.CSS_SELECTOR, ".st-key-task-cancelled-variability").text
        return text if "cancelled after" in text else None

    text = _wait(driver, cancelled_text, 60, "the cancelled message's text")
    assert "cancelled after" in text
    assert not driver.find_elements(By.CSS_SELECTOR, ".st-key-task-variability")
    _no_traceback(driver)
    _shot(driver, "task_cancelled")


def test_critical_message_link_opens_the_timeline(server, browser):
    """The critical-path page's message link reloads the page at that message: the URL names
    the run, the parameters and the op; the timeline marks it."""
    _ensure_run(server)
    driver = browser
    driver.get(server.url)
    _css(driver, '[data-testid="stDataFrame"]', "the runs table")
    _idle(driver)
    _open_page(driver, "critical_path", ".st-key-path-runtime")
    link = _wait(
        driver,
        EC.element_to_be_clickable(
            (By.XPATH, "//a[.//*[normalize-space()='Show this message on the timeline']]")
        ),
        90,
        "the message link",
    )
    link.click()
    _css(driver, ".st-key-path-runtime", "the critical-path page")
    _idle(driver)
    _wait(
        driver,
        EC.presence_of_element_located((By.XPATH, "//*[contains(text(), 'Linked op')]")),
        60,
        "the linked op's note",
    )
    url = driver.current_url
    assert "focus=" in url, url
    assert "page=critical_path" in url and "run=" in url and "L=" in url, url
    _wait(
        driver,
        lambda d: d.execute_script(
            "return [...document.querySelectorAll('.js-plotly-plot')].some("
            "p => (p.data || []).some(t => t.name === 'linked op'))"
        ),
        60,
        "the linked op on the timeline",
    )
    _no_traceback(driver)
    _shot(driver, "critical_path_linked")

    driver.get(url)  # a bookmark of the view reloads to the same view
    _css(driver, ".st-key-path-runtime", "the critical-path page from its URL")
    _idle(driver)
    _wait(
        driver,
        EC.presence_of_element_located((By.XPATH, "//*[contains(text(), 'Linked op')]")),
        60,
        "the linked op after a reload",
    )


def test_heatmap_cell_click_opens_the_timeline_at_that_pair(server, browser):
    """A click on a cell (i, j) of the λ_L^ij heatmap itself (not the pair picker below it)
    offers the link to rank pair (i, j), and the link opens the critical-path page at that
    pair: ``pair=i,j`` in the URL and the pair's first critical message marked on the
    timeline. Costs: the sidebar's uniform L and G, so a cell with λ_L^ij > 0 has
    a critical message on the critical-path page's path."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    _ensure_run(server)
    driver = browser
    driver.get(server.url)
    _css(driver, '[data-testid="stDataFrame"]', "the runs table")
    _idle(driver)
    _open_page(driver, "matrices", ".st-key-mx-runtime")
    _radio(driver, "Uniform L, G (sidebar)").click()
    _idle(driver)
    _plots_drawn(driver, 2)
    heatmap = ".st-key-plot_lambda_L .js-plotly-plot"
    _wait(
        driver,
        EC.presence_of_element_located((By.XPATH, "//*[contains(text(), 'L_ij, G_ij: uniform')]")),
        60,
        "the matrices under the sidebar's uniform L and G",
    )
    _idle(driver)
    default = _wait(
        driver,
        EC.presence_of_element_located(
            (By.XPATH, "//a[.//*[starts-with(normalize-space(), 'Critical messages between')]]")
        ),
        60,
        "the pair picker's link",
    ).text
    # a cell on the critical path other than the picker's default pair, by the figure's data
    cells = _wait(
        driver,
        lambda d: d.execute_script(
            f"const gd = document.querySelector('{heatmap}');"
            "if (!gd || !gd._fullData || !gd._fullLayout || !gd._fullLayout.xaxis) return null;"
            "const z = gd._fullData[0].customdata || gd._fullData[0].z; const out = [];"
            "z.forEach((row, i) => row.forEach((v, j) => { if (v > 0) out.push([i, j]); }));"
            "return out.length ? out : null;"
        ),
        60,
        "the drawn λ_L heat map",
    )
    choices = [(i, j) for i, j in cells if f"ranks {i} and {j} " not in default + " "]
    assert choices, (cells, default)
    i, j = choices[0]
    label = f"Critical messages between ranks {i} and {j} on the timeline"
    link_xpath = f"//a[.//*[normalize-space()={json.dumps(label)}]]"
    link = None
    for _attempt in range(3):  # a click during a rerun of the page is lost: click again
        time.sleep(1.0)  # Plotly has drawn the figure of the last run
        x, y = _wait(
            driver,
            lambda d: d.execute_script(
                f"const gd = document.querySelector('{heatmap}');"
                "if (!gd || !gd._fullLayout || !gd._fullLayout.xaxis) return null;"
                "gd.scrollIntoView({block: 'center'});"
                "const fl = gd._fullLayout, r = gd.getBoundingClientRect();"
                "return [r.left + fl.xaxis._offset + fl.xaxis.l2p(arguments[0]),"
                " r.top + fl.yaxis._offset + fl.yaxis.l2p(arguments[1])];",
                j,
                i,
            ),
            60,
            "the heat map's axes",
        )
        click = ActionBuilder(driver)
        click.pointer_action.move_to_location(int(x), int(y))
        click.pointer_action.pause(0.3)  # hover first: the cell under the pointer is picked
        click.pointer_action.click()
        click.perform()
        try:
            link = WebDriverWait(driver, 15, poll_frequency=0.25).until(
                EC.element_to_be_clickable((By.XPATH, link_xpath))
            )
            break
        except TimeoutException:
            continue
    if link is None:
        link = _wait(
            driver,
            EC.element_to_be_clickable((By.XPATH, link_xpath)),
            5,
            f"the link of the clicked cell ({i}, {j})",
        )
    _no_traceback(driver)
    _shot(driver, "matrices_cell_clicked")
    link.click()
    _css(driver, ".st-key-path-runtime", "the critical-path page")
    _idle(driver)
    url = driver.current_url
    assert f"pair={i}%2C{j}" in url or f"pair={i},{j}" in url, url
    assert "page=critical_path" in url, url
    _wait(
        driver,
        lambda d: d.execute_script(
            "return [...document.querySelectorAll('.js-plotly-plot')].some("
            "p => (p.data || []).some(t => t.name === 'linked op'))"
        ),
        60,
        "the pair's critical message on the timeline",
    )
    assert "No critical message between" not in _page_text(driver)
    _no_traceback(driver)
    _shot(driver, "critical_path_from_cell")


def test_every_page_opened_by_url_stays_on_this_machine(server, browser):
    """Every page opened by its URL (``?page=…&run=…``) shows that run, asks nothing of
    another machine (the tab's icon is drawn in the page, not fetched from fonts.gstatic.com)
    and shows no ``NaN``, ``Infinity`` or ``None``."""
    from llamp.ui.navigation import PAGES

    _ensure_run(server)
    driver = browser
    for spec in PAGES:
        name = Path(spec.path).stem
        driver.get(f"{server.url}/?page={name}&run=sweep3d-links")
        _css(driver, '[data-testid="stSidebarNav"]', f"the {name} page")
        _idle(driver)
        favicon = driver.execute_script(
            "const l = document.querySelector(\"link[rel='shortcut icon']\"); "
            "return l ? l.href : ''"
        )
        assert favicon.startswith(("data:", server.url)), (name, favicon[:120])
        fetched = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        away = [u for u in fetched if not u.startswith((server.url, "data:", "blob:"))]
        assert away == [], (name, away[:5])
        text = _page_text(driver)
        for word in ("NaN", "Infinity", "None"):
            assert f" {word}" not in text and f"\n{word}" not in text, (name, word)
        if name not in ("runs", "compare", "study", "cypher", "validation"):  # no run picker
            _wait(
                driver,
                lambda d: "sweep3d-links" in _page_text(d),
                60,
                f"the URL's run on the {name} page",
            )
        _no_traceback(driver)


def test_a_link_holds_its_run_when_the_menu_opens_another_page(server, browser):
    """``/?run=sweep3d-links&L=…`` (not the store's first run), then Latency from the menu:
    the page analyses that run with the link's L as the sidebar shows it (normalised), the
    URL says so, and the sidebar names no path of the server's file system."""
    _ensure_run(server)
    first = subprocess.run(
        [str(LLAMP), "ingest", str(BCAST), "--name", "a-first-run", "--replace"],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert first.returncode == 0, first.stderr
    driver = browser
    driver.get(f"{server.url}/?run=sweep3d-links&L=4999.909997161899ns")
    _css(driver, '[data-testid="stSidebarNav"]', "the runs page")
    _idle(driver)
    _open_page(driver, "latency", '[data-testid="stSidebarUserContent"]')
    _wait(
        driver,
        lambda d: "run=sweep3d-links" in d.current_url and "page=latency" in d.current_url,
        60,
        "the URL to keep the link's run on the Latency page",
    )
    _wait(driver, lambda d: "Run sweep3d-links ·" in _page_text(d), 60, "the link's run analysed")
    sidebar = driver.find_element(By.CSS_SELECTOR, '[data-testid="stSidebarUserContent"]').text
    assert "4.99991us" in driver.current_url, driver.current_url
    assert "/" not in sidebar.split("Store: ")[1].split("\n")[0], sidebar[:400]
    assert str(server.env["LLAMP_HOME"]) not in sidebar
    _no_traceback(driver)
