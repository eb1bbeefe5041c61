"""The compare HTML report: one self-contained file that renders in headless Chromium with every image
decoded and no console errors. Needs the `chromium` package (Debian/Ubuntu apt)."""
from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

from g2gsim.analysis import compare, whatif
from g2gsim.analysis.report_html import compare_report
from g2gsim.generate import generate

CHROMIUM = next((shutil.which(c) for c in ("chromium", "chromium-browser", "google-chrome", "chrome") if shutil.which(c)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("html")
    t = d / "lulesh.g2g.parquet"
    generate("lulesh", 27, iterations=2).write(t)
    res = compare(t, "lassen", mixed=True)
    w = whatif(t, "lassen", [1, 4])
    path = compare_report(res, whatif_res=w).write(d / "report.html")
    return path


def test_report_is_self_contained(report):
    html = report.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html and "<link" not in html
    srcs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert not re.search(r"https?://", html)
    assert html.count("<img") >= 6
    for h in ("Summary", "By operation", "By message size", "POP efficiencies", "Profiles", "GPUs per node"):
        assert h in html
    assert "Avg_Total_Time" in html and "Instances_per_Process" in html


def _chromium(*args, tmp_path, timeout=90):
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_report_renders_in_chromium(report, tmp_path):
    # the report has no scripts; a copy gets one that counts the decoded images once the page loaded
    probe = tmp_path / "probe.html"
    script = ("<script>window.addEventListener('load',function(){var im=document.images,ok=0;"
              "for(var i=0;i<im.length;i++){if(im[i].complete&&im[i].naturalWidth>0)ok++;}"
              "document.title='decoded '+ok+' of '+im.length;});</script>")
    probe.write_text(report.read_text().replace("</body>", script + "</body>"))
    r = _chromium("--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom",
                  probe.as_uri(), tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r"<title>decoded (\d+) of (\d+)</title>", r.stdout)
    assert m, r.stdout[:500]
    ok, total = int(m.group(1)), int(m.group(2))
    assert total >= 6 and ok == total
    console = [ln for ln in r.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]
    assert not console, console
    assert "net::ERR" not in r.stderr
    # and a screenshot of the real file
    shot = tmp_path / "report.png"
    r = _chromium(f"--screenshot={shot}", "--window-size=1200,2000", report.as_uri(), tmp_path=tmp_path)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    assert (w, h) == (1200, 2000) and len(data) > 50_000  # a page with figures, not a blank one
