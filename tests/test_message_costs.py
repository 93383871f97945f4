"""Measured per-message overheads (PLogP's o_s(m), o_r(m)) charged as CPU time
(llamp/injector/message_costs.py, ``llamp validate --overheads measured``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from llamp.errors import InputError
from llamp.graph import CALC, RECV, SEND, ExecutionGraph
from llamp.injector.calibrate import PingPongSample, fit_loggp
from llamp.injector.message_costs import MessageCosts
from llamp.injector.profiles import NetworkProfile, load_profile, save_profile
from llamp.injector.validate import (
    MEASURED_MODELS,
    MODELS,
    Validation,
    ValidationPoint,
    measured_overheads,
    predict_deltas,
    predict_models,
)
from llamp.params import LogGPS

#: shared memory as this VM's ping-pong sees it (ns): an eager copy below 2 KiB, a
#: single-copy read of several µs above it, and a one-way time the two overheads exceed.
SHM = MessageCosts(
    sizes=(1, 1024, 8192),
    send_ns=(80.0, 500.0, 4000.0),
    recv_ns=(250.0, 400.0, 3600.0),
    one_way_ns=(160.0, 330.0, 4500.0),
    o_ns=150.0,
    eager_limit=2048,
)


def test_extras_are_the_measured_overheads_beyond_o_by_hand():
    sizes = np.array([1, 512, 1024, 4096, 8192, 16384])
    # sends: eager only (a rendezvous MPI_Send waits for the reader), never below 0
    slope = (500.0 - 80.0) / 1023.0
    assert SHM.send_extra(sizes).tolist() == pytest.approx(
        [0.0, 80.0 + slope * 511 - 150.0, 350.0, 0.0, 0.0, 0.0]
    )
    # receives: linear between sizes, the last segment extended beyond the largest
    last = (3600.0 - 400.0) / (8192 - 1024)
    assert SHM.recv_extra(sizes).tolist() == pytest.approx(
        [
            100.0,
            250.0 + (400.0 - 250.0) / 1023.0 * 511 - 150.0,
            250.0,
            400.0 + last * (4096 - 1024) - 150.0,
            3450.0,
            3600.0 + last * 8192 - 150.0,
        ]
    )


def test_the_wire_is_what_the_one_way_time_leaves():
    # on shared memory both overheads exceed the one-way time: no wire left
    assert SHM.wire() == (0.0, 0.0)
    # a NIC: y(m) = o_s(m) + 700 + (m − 1)·0.2 + o_r(m) over the eager sizes
    sizes = (1, 256, 4096, 65536)
    send = (300.0, 320.0, 600.0, 2000.0)
    recv = (310.0, 330.0, 500.0, 1500.0)
    y = tuple(s + r + 700.0 + (m - 1) * 0.2 for m, s, r in zip(sizes, send, recv, strict=True))
    nic = MessageCosts(sizes, send, recv, y, o_ns=305.0, eager_limit=None)
    assert nic.wire() == pytest.approx((700.0, 0.2))


def _ping() -> ExecutionGraph:
    """Rank 0: c0 (1 µs) → send 8 KiB → c2 (2 µs). Rank 1: c3 (5 µs) → recv → c5 (1 µs).
    And a 512 B message back after it: rank 1 c5 → send → c7; rank 0 c2 → recv → c9."""
    kind = [CALC, SEND, CALC, CALC, RECV, CALC, SEND, CALC, RECV, CALC]
    rank = [0, 0, 0, 1, 1, 1, 1, 1, 0, 0]
    cost = [1000, 0, 2000, 5000, 0, 1000, 0, 0, 0, 0]
    size = [0, 8192, 0, 0, 8192, 0, 512, 0, 512, 0]
    peer = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    edges = [(0, 1), (1, 2), (3, 4), (4, 5), (5, 6), (6, 7), (2, 8), (8, 9)]
    messages = [(1, 4), (6, 8)]
    order = np.argsort(rank, kind="stable")  # ranks contiguous
    where = np.empty(len(kind), np.int64)
    where[order] = np.arange(len(kind))
    pairs = edges + messages
    return ExecutionGraph.from_arrays(
        2,
        rank=np.asarray(rank)[order],
        kind=np.asarray(kind)[order],
        cost_ns=np.asarray(cost, float)[order],
        size=np.asarray(size)[order],
        peer=np.asarray(peer)[order],
        tag=[0] * len(kind),
        edge_src=[where[a] for a, _ in pairs],
        edge_dst=[where[b] for _, b in pairs],
        edge_kind=[0] * len(edges) + [2] * len(messages),
    )


def test_charge_puts_a_receive_after_its_call_and_an_eager_send_before_it():
    g = _ping()
    charged = SHM.charge(g)
    # the 8 KiB receive's 3,450 ns go to the calc after it (rank 1's 1 µs); the 512 B eager
    # send's extra to the calc before it (that same calc: it precedes the send), its receive's
    # to rank 0's last calc; the 8 KiB send is rendezvous: nothing
    send512 = SHM.send_extra(np.array([512]))[0]
    recv512 = SHM.recv_extra(np.array([512]))[0]
    assert sorted(charged.cost_ns.tolist()) == sorted(
        [1000.0, 2000.0, 5000.0, 1000.0 + 3450.0 + send512, 0.0, recv512] + [0.0] * 4
    )
    assert charged.meta["message_costs"] == {
        "recv_charged": 2,
        "recv_ns": pytest.approx(3450.0 + recv512),
        "recv_uncharged": 0,
        "send_charged": 1,
        "send_ns": pytest.approx(send512),
        "send_uncharged": 0,
    }
    assert g.cost_ns.sum() == 9000.0  # the original is untouched
    # T by hand, L = G = 0, o = 150 ns, the schedule order, the handshake for 8 KiB > S:
    # before, rank 0's send is released at 5000 + 2o when rank 1 posts its receive, computes
    # 2 µs and receives the answer: 5300 + 2000 + o = 7450. After, rank 1's path: its receive
    # done at 5000 + 3o, its calc 1000 + 3450 + the 512 B send's extra, the send's o, the
    # receive's o on rank 0, then rank 0's last calc with the 512 B receive's extra.
    params = LogGPS(L=0.0, o=150.0, G=0.0, S=2048)
    before = float(predict_deltas(g, params, [0.0])["runtime_ns"].iloc[0])
    after = float(predict_deltas(charged, params, [0.0])["runtime_ns"].iloc[0])
    assert before == pytest.approx(7450.0)
    assert after == pytest.approx(5450.0 + 4450.0 + send512 + 300.0 + recv512)
    glop = float(predict_deltas(charged, params, [0.0], engine="glop")["runtime_ns"].iloc[0])
    assert glop == pytest.approx(after, rel=1e-9)


def test_from_a_calibration_and_a_profile(tmp_path, monkeypatch):
    samples = [
        PingPongSample(size=s, rtt_ns=2 * y, os_ns=a, or_ns=b)
        for s, y, a, b in zip(
            (1, 4, 16, 64, 256, 1024, 2048, 4096, 8192, 16384),
            (160, 160, 170, 200, 240, 320, 410, 3440, 4490, 6090),
            (70, 60, 70, 70, 70, 450, 520, 3270, 3700, 4430),
            (230, 180, 220, 240, 250, 330, 360, 3380, 3600, 4360),
            strict=True,
        )
    ]
    fit = fit_loggp(samples)
    costs = MessageCosts.from_calibration(fit)
    assert costs.sizes[0] == 1 and costs.recv_ns[-1] == 4360.0
    assert costs.eager_limit == fit.S_bytes and costs.o_ns == fit.o_ns
    again = MessageCosts.from_record(json.loads(json.dumps(fit.as_dict())))
    assert again == costs
    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    save_profile("shm", fit.params(), source="test", details=fit.as_dict())
    assert MessageCosts.from_profile(load_profile("shm")) == costs
    bare = NetworkProfile("bare", LogGPS(L=1000.0, o=100.0))
    with pytest.raises(InputError, match="network profile 'bare': no per-size ping-pong"):
        MessageCosts.from_profile(bare)
    with pytest.raises(InputError, match="ascending"):
        MessageCosts((8, 4), (1.0, 1.0), (1.0, 1.0), (1.0, 1.0), 1.0, None)


def test_validation_predicts_the_measured_models_beside_the_others():
    g = _ping()
    params = LogGPS(L=0.0, o=150.0, G=0.12, S=2048)
    deltas = [0.0, 10_000.0]
    plain = predict_models(g, params, deltas)
    assert set(plain) == {m.name for m in MODELS}
    both = predict_models(g, params, deltas, SHM)
    assert set(both) == {m.name for m in (*MODELS, *MEASURED_MODELS)}
    assert "async/overlap/schedule/handshake/rescheduled/measured" in both
    charged, wired = measured_overheads(g, params, SHM)
    assert (wired.L, wired.G, wired.o, wired.S) == (0.0, 0.0, 150.0, 2048)
    by_hand = predict_deltas(charged, wired.with_(order="schedule"), deltas, engine="graph")
    assert both["async/overlap/schedule/handshake/measured"] == pytest.approx(
        tuple(by_hand["runtime_ns"])
    )


def test_a_validation_says_what_it_charged():
    point = ValidationPoint(0.0, 1.0e6, 2.0, (1.0e6, 1.01e6, 0.99e6))
    result = Validation(
        run="halo",
        command=("mpirun", "./halo"),
        params=LogGPS(L=0.0, o=150.0, G=0.0, S=2048),
        points=(point,),
        repeat=3,
        traced_runtime_ns=1.0e6,
        overheads="measured",
        message_costs=SHM.describe(),
    )
    assert Validation.from_dict(json.loads(json.dumps(result.as_dict()))) == result
    assert "charged in the model (--overheads measured): measured overheads" in result.summary()
    assert "wire L = 0 ns, G = 0 ns/B" in SHM.describe()


def test_validate_measured_overheads_need_a_calibrated_network(tmp_path, monkeypatch):
    from llamp.cli import injector  # noqa: F401
    from llamp.cli.base import cli

    monkeypatch.setenv("LLAMP_HOME", str(tmp_path))
    args = ["validate", "--deltas", "0,10us", "--overheads", "measured"]
    result = CliRunner().invoke(cli, [*args, "--L", "1us", "--o", "100ns", "--", "true"])
    assert isinstance(result.exception, InputError)  # exit 2 from the entry point
    assert "--overheads measured needs a calibrated network" in str(result.exception)
    save_profile("bare", LogGPS(L=1000.0, o=100.0))
    result = CliRunner().invoke(cli, [*args, "--network", "bare", "--", "true"])
    assert isinstance(result.exception, InputError)
    assert "network profile 'bare': no per-size ping-pong times" in str(result.exception)


def test_rescore_adds_the_measured_models_when_the_calibration_kept_its_sizes(tmp_path):
    import shutil
    from pathlib import Path

    from benchmarks.validation import markdown, rescore

    trace = Path(__file__).parent / "data" / "traces" / "liballprof" / "sweep3d-2x2"
    shutil.copytree(trace, tmp_path / "trace-0")
    samples = [
        PingPongSample(size=s, rtt_ns=2 * y, os_ns=a, or_ns=b)
        for s, y, a, b in zip(
            (1, 16, 256, 1024, 2048, 4096, 8192, 16384),
            (160, 170, 240, 320, 410, 3440, 4490, 6090),
            (70, 70, 70, 450, 520, 3270, 3700, 4430),
            (230, 220, 250, 330, 360, 3380, 3600, 4360),
            strict=True,
        )
    ]
    fit = fit_loggp(samples)
    (tmp_path / "calibration.json").write_text(json.dumps(fit.as_dict()))
    p = fit.params()
    kept = {
        "run": "halo-8k-2",
        "command": ["mpirun", "-n", "2", "./halo"],
        "params": {"L_ns": p.L, "o_ns": p.o, "G_ns_per_byte": p.G, "S_bytes": p.S, "g_ns": 0.0},
        "repeat": 3,
        "overheads": "measured",
        "points": [
            {"delta_ns": d, "runs_ns": [2.0e6 + d] * 3, "loadavg": [0.1] * 3}
            for d in (0.0, 20_000.0)
        ],
    }
    (tmp_path / "halo-8k-2.json").write_text(json.dumps(kept))
    calibration, [(app, v)] = rescore(tmp_path, log=lambda *_: None)
    assert list(v.models) == [m.name for m in (*MODELS, *MEASURED_MODELS)]
    assert v.overheads == "measured" and "wire L = 0 ns" in v.message_costs
    # the prediction is the measured overheads' under the run's model (its injector's
    # handshake), each ΔL in its own schedule's order
    assert [q.predicted_ns for q in v.points] == pytest.approx(
        list(v.models["async/overlap/schedule/handshake/rescheduled/measured"]), rel=1e-12
    )
    text = markdown(calibration, [(app, v)], "x")
    assert "RRMSE async/overlap/schedule/handshake/rescheduled/measured" in text
