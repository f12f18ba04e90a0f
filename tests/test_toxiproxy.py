"""Toxiproxy is the real server, found in the documented order, and every refusal is explained."""

import dataclasses
import os
import subprocess
import sys

import pytest
import requests

from relaychaos.errors import ToxiproxyError
from relaychaos.ports import lease_port
from relaychaos.stack import proxy_owner, toxiproxy_server

pytestmark = pytest.mark.stack  # the real Toxiproxy server


def test_proxies_forward_and_toxics_are_added_and_removed(toxiproxy, account_system):
    proxy = toxiproxy.create_proxy("test-adapter-forward", f"127.0.0.1:{account_system.port}")
    probe = f"{proxy.url}/transfer/never-sent"  # the query API: a read, the fixture's public port has nothing else
    try:
        assert requests.get(probe, timeout=2).json() == {"guid": "never-sent", "found": False}
        toxiproxy.add_toxic(proxy, "slow", "latency", latency=300)
        assert toxiproxy.toxic_names(proxy) == ["slow"]
        assert requests.get(probe, timeout=2).elapsed.total_seconds() >= 0.3
        toxiproxy.set_enabled(proxy, False)
        with pytest.raises(requests.ConnectionError):
            requests.get(probe, timeout=2)
        toxiproxy.heal(proxy)
        assert toxiproxy.toxic_names(proxy) == []
        assert requests.get(probe, timeout=2).status_code == 404
    finally:
        toxiproxy.destroy(proxy.name)
    assert "test-adapter-forward" not in toxiproxy.proxy_names()


def test_refusals_of_the_server_become_clear_errors(toxiproxy):
    proxy = toxiproxy.create_proxy("test-adapter-dup", "127.0.0.1:9")
    try:
        with pytest.raises(ToxiproxyError, match="ProxyExists"):
            toxiproxy.create_proxy("test-adapter-dup", "127.0.0.1:9")
        with pytest.raises(ToxiproxyError, match="unknown toxic type 'lag'"):
            toxiproxy.add_toxic(proxy, "x", "lag")
        with pytest.raises(ToxiproxyError, match="NotFound"):
            toxiproxy.remove_toxic(proxy, "never-added")
    finally:
        toxiproxy.destroy(proxy.name)


def test_an_unreachable_toxiproxy_url_says_so_and_how_to_fix_it(monkeypatch, tmp_path):
    monkeypatch.setenv("TOXIPROXY_URL", f"http://127.0.0.1:{lease_port()}")
    with pytest.raises(ToxiproxyError) as e:
        toxiproxy_server.acquire(tmp_path)
    assert "does not answer" in str(e.value) and "unset TOXIPROXY_URL" in str(e.value)


def test_toxiproxy_url_is_used_as_it_is(monkeypatch, toxiproxy, tmp_path):
    monkeypatch.setenv("TOXIPROXY_URL", toxiproxy.url)
    server = toxiproxy_server.acquire(tmp_path)
    assert server.source == "TOXIPROXY_URL" and server.url == toxiproxy.url
    server.close()
    assert toxiproxy.version()  # not stopped: the harness did not start it


def test_no_server_anywhere_gives_one_message_with_the_ways_to_install_one(monkeypatch, tmp_path):
    monkeypatch.delenv("TOXIPROXY_URL", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    monkeypatch.setenv("RELAYCHAOS_TOOLS_BIN", str(tmp_path / "empty"))
    with pytest.raises(ToxiproxyError) as e:
        toxiproxy_server.acquire(tmp_path)
    text = str(e.value)
    assert "no Toxiproxy server found" in text and "no Docker daemon" in text
    assert "go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0" in text


# A process of the harness's side that makes one proxy the way a stack names it, says its name, and waits to be killed
OWNER = """
import sys, time
from relaychaos.stack import proxy_owner
from relaychaos.stack.toxiproxy_control import Toxiproxy
print(Toxiproxy(sys.argv[1]).create_proxy(proxy_owner.prefix("killed") + "-account", "127.0.0.1:9").name, flush=True)
time.sleep(60)
"""


@pytest.mark.process
def test_toxiproxy_url_loses_the_proxies_of_a_run_killed_on_this_machine_and_keeps_every_other(
    monkeypatch, toxiproxy, tmp_path
):
    killed = subprocess.Popen([sys.executable, "-c", OWNER, toxiproxy.url], stdout=subprocess.PIPE, text=True)
    try:
        left = killed.stdout.readline().strip()
    finally:
        killed.kill()  # SIGKILL: it never removes its proxy
        killed.wait()
    me = proxy_owner.this_process()
    reused = dataclasses.replace(me, start=me.start + 1)  # this pid, but an earlier process that had it
    elsewhere = dataclasses.replace(me, space="0" * 8 if me.space != "0" * 8 else "1" * 8, pid=killed.pid)
    kept = [f"{me.tag}1-live-account", f"{elsewhere.tag}1-other-machine", f"rc{killed.pid}-1-untagged", "team-proxy"]
    for name in [f"{reused.tag}1-pid-reused", *kept]:
        toxiproxy.create_proxy(name, "127.0.0.1:9")
    monkeypatch.setenv("TOXIPROXY_URL", toxiproxy.url)
    try:
        server = toxiproxy_server.acquire(tmp_path)
        assert sorted(server.swept) == sorted([left, f"{reused.tag}1-pid-reused"])
        assert (tmp_path / "toxiproxy-swept.log").read_text().split() == server.swept
        assert sorted(set(toxiproxy.proxy_names()) & {left, *kept, f"{reused.tag}1-pid-reused"}) == sorted(kept)
        assert toxiproxy_server.acquire(tmp_path).swept == [], "nothing dead is left: a second run removes nothing"
    finally:
        for name in kept:
            toxiproxy.destroy(name)


@pytest.mark.process
@pytest.mark.skipif(os.geteuid() != 0, reason="a time namespace of its own needs root")
def test_a_live_run_in_another_time_namespace_keeps_its_proxies(monkeypatch, toxiproxy, tmp_path):
    """/proc gives a process's start time shifted by the reader's boot-time offset: a live run whose namespace has
    another offset would read as a pid used again, so the time namespace is part of the tag's space."""
    live = subprocess.Popen(
        ["unshare", "--time", "--boottime", "100000", "--fork", sys.executable, "-c", OWNER, toxiproxy.url],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        name = live.stdout.readline().strip()
        monkeypatch.setenv("TOXIPROXY_URL", toxiproxy.url)
        assert toxiproxy_server.acquire(tmp_path).swept == [] and name in toxiproxy.proxy_names()
    finally:
        live.kill()
        live.wait()
        toxiproxy.destroy(name)
