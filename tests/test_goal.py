"""GOAL reader and writer (ingest/goal.py): shared Schedgen/LogGOPSim files, hand-checked edges,
round trips, wildcard matching, comments, cpu/nic, and one test per malformed input."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from llamp.errors import GraphError, TraceError
from llamp.graph import CALC, IREQUIRES, MESSAGE, RECV, REQUIRES, SEND, ExecutionGraph
from llamp.ingest.goal import fifo_match, parse_goal_text, read_goal, write_goal

GOAL_DIR = Path(__file__).parent / "data" / "traces" / "goal"
SHARED = ["blocking.goal", "non_blocking.goal", "binary_tree_32.goal"]


def edges(graph: ExecutionGraph) -> set[tuple[int, int, int]]:
    return set(
        zip(graph.edge_src.tolist(), graph.edge_dst.tolist(), graph.edge_kind.tolist(), strict=True)
    )


def goal(body: str, ranks: int = 2) -> str:
    """A GOAL text whose rank blocks are given as one string per rank separated by '---'."""
    blocks = body.split("---")
    assert len(blocks) == ranks
    out = [f"num_ranks {ranks}"]
    for r, block in enumerate(blocks):
        out += [f"rank {r} {{", block.strip("\n"), "}"]
    return "\n".join(out) + "\n"


def parse_error(text: str, **kw) -> TraceError:
    with pytest.raises(TraceError) as info:
        parse_goal_text(text, name="t.goal", **kw)
    return info.value


# --------------------------------------------------------------------------- shared files


@pytest.mark.parametrize("name", SHARED)
def test_shared_files_have_the_counts_a_plain_reading_gives(name):
    lines = [line.strip() for line in (GOAL_DIR / name).read_text().splitlines()]
    ops = [line for line in lines if ": " in line]
    sends = sum(": send " in line for line in ops)
    recvs = sum(": recv " in line for line in ops)
    calcs = sum(": calc " in line for line in ops)
    requires = sum(" requires " in line for line in lines)
    irequires = sum(" irequires " in line for line in lines)
    num_ranks = int(next(line for line in lines if line.startswith("num_ranks")).split()[1])

    graph = read_goal(GOAL_DIR / name)
    assert graph.num_ranks == num_ranks
    assert graph.num_vertices == len(ops) == sends + recvs + calcs
    assert int((graph.kind == SEND).sum()) == sends
    assert int((graph.kind == RECV).sum()) == recvs
    assert int((graph.kind == CALC).sum()) == calcs
    assert int((graph.edge_kind == REQUIRES).sum()) == requires
    assert int((graph.edge_kind == IREQUIRES).sum()) == irequires
    assert int((graph.edge_kind == MESSAGE).sum()) == sends == recvs
    assert graph.meta["format"] == "goal" and graph.meta["name"] == name.removesuffix(".goal")


def test_blocking_goal_vertices_and_edges_by_hand():
    g = read_goal(GOAL_DIR / "blocking.goal")
    # rank 0: l1 send 4b to 1 tag 1, l2 calc 1000, l3 calc 2000; rank 1: l1 recv, l2 calc 3000, l3
    assert g.rank.tolist() == [0, 0, 0, 1, 1, 1]
    assert g.kind.tolist() == [SEND, CALC, CALC, RECV, CALC, CALC]
    assert g.cost_ns.tolist() == [0, 1000, 2000, 0, 3000, 2000]
    assert g.size.tolist() == [4, 0, 0, 4, 0, 0]
    assert g.peer[[0, 3]].tolist() == [1, 0]
    assert g.tag[[0, 3]].tolist() == [1, 1]
    assert g.label.tolist() == ["l1", "l2", "l3", "l1", "l2", "l3"]
    assert edges(g) == {
        (1, 0, REQUIRES),  # l1 requires l2: the send starts after calc 1000 ns
        (0, 2, REQUIRES),  # l3 requires l1
        (4, 3, REQUIRES),  # rank 1: recv after calc 3000 ns
        (3, 5, REQUIRES),
        (0, 3, MESSAGE),
    }


def test_non_blocking_goal_vertices_and_edges_by_hand():
    g = read_goal(GOAL_DIR / "non_blocking.goal")
    assert g.kind.tolist() == [SEND, CALC, CALC, CALC, RECV, CALC, CALC]
    assert g.cost_ns.tolist() == [0, 1000, 2000, 4000, 0, 3000, 2000]
    assert edges(g) == {
        (1, 0, REQUIRES),  # l1 requires l2
        (0, 2, IREQUIRES),  # l3 irequires l1: calc 2000 starts when the send starts
        (0, 3, REQUIRES),  # l4 requires l1
        (2, 3, REQUIRES),  # l4 requires l3
        (5, 4, REQUIRES),
        (4, 6, REQUIRES),
        (0, 4, MESSAGE),
    }


def test_binary_tree_messages_follow_the_tree():
    g = read_goal(GOAL_DIR / "binary_tree_32.goal")
    sends, recvs = g.messages()
    pairs = sorted(zip(g.rank[sends].tolist(), g.rank[recvs].tolist(), strict=True))
    # binomial tree from rank 0: every rank r > 0 receives once, from r minus its highest bit
    assert pairs == sorted((r - (1 << (r.bit_length() - 1)), r) for r in range(1, 32))


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", SHARED)
def test_shared_files_round_trip_line_for_line(name, tmp_path):
    original = read_goal(GOAL_DIR / name)
    out = write_goal(original, tmp_path / name)
    back = read_goal(out)
    assert back.equals(original, labels=True)
    assert out.costs_rounded == 0 and out.rounding_total_ns == 0.0
    written = [line for line in out.path.read_text().splitlines() if line.strip()]
    source = [line.strip() for line in (GOAL_DIR / name).read_text().splitlines() if line.strip()]
    assert written == source


def ring_graph(ranks: int = 4, iterations: int = 3) -> ExecutionGraph:
    """Isend right / irecv left per iteration (tag = 10 + iteration), both irequiring a calc with
    a fractional cost, and a wait calc requiring both; labels absent."""
    rank, kind, cost, size, peer, tag = [], [], [], [], [], []
    src, dst, ek = [], [], []
    vid: dict[tuple[int, int, str], int] = {}
    for r in range(ranks):
        for it in range(iterations):
            for what, k, c, s, p in (
                ("calc", CALC, 1000.0 / 3.0 + it, 0, 0),
                ("send", SEND, 0.0, 8 << it, (r + 1) % ranks),
                ("recv", RECV, 0.0, 8 << it, (r - 1) % ranks),
                ("wait", CALC, float(2**53 + 2 * it), 0, 0),
            ):
                vid[r, it, what] = len(rank)
                rank.append(r)
                kind.append(k)
                cost.append(c)
                size.append(s)
                peer.append(p)
                tag.append(10 + it if k != CALC else 0)
            for a, b, kk in (
                ("calc", "send", IREQUIRES),
                ("calc", "recv", IREQUIRES),
                ("send", "wait", REQUIRES),
                ("recv", "wait", REQUIRES),
            ):
                src.append(vid[r, it, a])
                dst.append(vid[r, it, b])
                ek.append(kk)
            if it:
                src.append(vid[r, it - 1, "wait"])
                dst.append(vid[r, it, "calc"])
                ek.append(REQUIRES)
    for r in range(ranks):
        for it in range(iterations):
            src.append(vid[r, it, "send"])
            dst.append(vid[(r + 1) % ranks, it, "recv"])
            ek.append(MESSAGE)
    return ExecutionGraph.from_arrays(
        ranks,
        rank=rank,
        kind=kind,
        cost_ns=cost,
        size=size,
        peer=peer,
        tag=tag,
        edge_src=src,
        edge_dst=dst,
        edge_kind=ek,
    )


def test_generated_graph_round_trips_with_generated_labels_and_rounded_costs(tmp_path):
    graph = ring_graph()
    written = write_goal(graph, tmp_path / "ring.goal")
    back = read_goal(written)
    # 333.33…, 334.33…, 335.33… per rank become 333, 334, 335: 1/3 ns each, 4 ranks
    assert written.costs_rounded == 12
    assert written.rounding_total_ns == pytest.approx(12 / 3)
    assert written.rounding_max_ns == pytest.approx(1 / 3)
    assert back.cost_ns[0] == 333.0 and back.cost_ns[4] == 334.0
    assert back.cost_ns[3] == float(2**53)
    assert back.cost_ns[7] == float(2**53 + 2)
    exact = graph.cost_ns.copy()
    graph.cost_ns[:] = np.rint(exact)
    assert back.equals(graph)  # everything else (kinds, edges, peers, tags) comes back
    graph.cost_ns[:] = exact
    assert back.label[:5].tolist() == ["l1", "l2", "l3", "l4", "l5"]
    assert back.label[12] == "l1"  # rank 1 starts again at l1
    assert int((back.edge_kind == IREQUIRES).sum()) == 4 * 3 * 2
    assert sorted(set(back.tag[back.kind != CALC].tolist())) == [10, 11, 12]
    text = (tmp_path / "ring.goal").read_text()
    assert "l1: calc 333\n" in text
    assert "l4: calc 9007199254740992\n" in text  # integral costs as integers, even above 2**53
    assert "l8: calc 9007199254740994\n" in text
    assert "l2: send 8b to 1 tag 10\n" in text


def calc_chain(costs: list[float]) -> ExecutionGraph:
    """One rank, a chain of calcs with the given costs."""
    n = len(costs)
    return ExecutionGraph.from_arrays(
        1,
        rank=[0] * n,
        kind=[CALC] * n,
        cost_ns=costs,
        size=[0] * n,
        peer=[0] * n,
        tag=[0] * n,
        edge_src=list(range(n - 1)),
        edge_dst=list(range(1, n)),
        edge_kind=[REQUIRES] * (n - 1),
    )


def test_costs_round_to_nearest_ties_to_even_and_the_report_adds_up(tmp_path):
    g = calc_chain([0.5, 1.5, 2.5, 0.4, 7.0, 2.6])
    written = write_goal(g, tmp_path / "ties.goal")
    assert read_goal(written).cost_ns.tolist() == [0, 2, 2, 0, 7, 3]
    assert written.costs_rounded == 5
    assert written.rounding_total_ns == pytest.approx(0.5 + 0.5 + 0.5 + 0.4 + 0.4)
    assert written.rounding_max_ns == 0.5
    assert "5 calc cost(s) rounded" in written.describe()
    assert written.as_dict()["path"] == str(tmp_path / "ties.goal")


def test_labels_that_are_not_goal_labels_are_replaced(tmp_path):
    graph = read_goal(GOAL_DIR / "blocking.goal")
    graph.label = np.array(["t.txt:1", "b", "c", "a", "a", "c"], dtype=object)
    text = write_goal(graph, tmp_path / "x.goal").path.read_text()
    assert "l1: send 4b to 1 tag 1" in text and "t.txt" not in text
    graph.label = np.array(["x", "b", "c", "a", "a", "c"], dtype=object)  # 'a' twice in rank 1
    back = read_goal(write_goal(graph, tmp_path / "y.goal"))
    assert back.label.tolist() == ["l1", "l2", "l3", "l1", "l2", "l3"]
    graph.label = np.array(["x", "b", "c", "a", "d", "c"], dtype=object)
    back = read_goal(write_goal(graph, tmp_path / "z.goal"))
    assert back.label.tolist() == ["x", "b", "c", "a", "d", "c"]
    assert back.equals(graph, labels=True)


def test_writer_refuses_messages_that_are_not_fifo(tmp_path):
    text = goal(
        "a: send 4b to 1 tag 0\nb: send 4b to 1 tag 0\n---\nc: recv 4b from 0 tag 0\n"
        "d: recv 4b from 0 tag 0"
    )
    g = parse_goal_text(text)
    assert edges(g) >= {(0, 2, MESSAGE), (1, 3, MESSAGE)}
    crossed = ExecutionGraph.from_arrays(
        2,
        rank=g.rank,
        kind=g.kind,
        cost_ns=g.cost_ns,
        size=g.size,
        peer=g.peer,
        tag=g.tag,
        edge_src=[0, 1],
        edge_dst=[3, 2],
        edge_kind=[MESSAGE, MESSAGE],
    )
    with pytest.raises(GraphError, match="FIFO"):
        write_goal(crossed, tmp_path / "crossed.goal")
    assert not (tmp_path / "crossed.goal").exists()


def test_writer_refuses_non_finite_costs(tmp_path):
    g = read_goal(GOAL_DIR / "blocking.goal")
    g.cost_ns[1] = np.inf
    with pytest.raises(GraphError, match="not finite"):
        write_goal(g, tmp_path / "inf.goal")


def test_writer_refuses_negative_tags(tmp_path):
    g = read_goal(GOAL_DIR / "blocking.goal")
    g.tag[[0, 3]] = -1
    with pytest.raises(GraphError, match="negative tag"):
        write_goal(g, tmp_path / "neg.goal")


def test_fifo_match_pairs_kth_send_with_kth_recv_per_source_destination_tag():
    rank = np.array([0, 0, 0, 1, 1, 1])
    kind = np.array([SEND, SEND, SEND, RECV, RECV, RECV])
    peer = np.array([1, 1, 1, 0, 0, 0])
    tag = np.array([5, 7, 5, 5, 5, 7])
    s, r = fifo_match(rank, kind, peer, tag)
    assert sorted(zip(s.tolist(), r.tolist(), strict=True)) == [(0, 3), (1, 5), (2, 4)]


# --------------------------------------------------------------------------- grammar details


def test_comments_of_both_kinds_anywhere_keep_line_numbers():
    text = (
        "// Schedgen output\n"
        "num_ranks 2 /* two ranks */\n"
        "/* rank 0 {\n"
        "   l9: calc 5\n"
        "} */\n"
        "rank 0 {\n"
        "l1: send 4b to 1 tag 3 // the only message\n"
        "l2: calc /* inline */ 100\n"
        "l1 requires l2\n"
        "}\n"
        "rank 1 {\n"
        "l1: recv 4b from 0 tag 3\n"
        "l2 requires l1\n"  # line 13: l2 is undefined
        "}\n"
    )
    err = parse_error(text)
    assert err.line == 13 and "'l2' is not defined" in str(err)
    g = parse_goal_text(text.replace("l2 requires l1\n", "// l2 requires l1\n"))
    assert g.num_vertices == 3
    assert g.cost_ns.tolist() == [0.0, 100.0, 0.0] and g.tag.tolist() == [3, 0, 3]
    assert edges(g) == {(1, 0, REQUIRES), (0, 2, MESSAGE)}


def test_block_comment_is_whitespace_between_tokens():
    err = parse_error(goal("l1: calc 1/* x */00\n---\n"))
    assert err.line == 3 and "unexpected '00'" in str(err)
    g = parse_goal_text(goal("l1: calc /* x */ 100\n---\nl1: calc 7 // tail\n"))
    assert g.cost_ns.tolist() == [100.0, 7.0]


def test_optional_parts_size_spacing_unlabelled_ops_and_header_forms(tmp_path):
    text = (
        "num_ranks 3\n"
        "rank 0{\n"
        "a: send 4 b to 1\n"  # tag defaults to 0, '4 b' as in txt2bin
        "b : send 8b to 2 tag 9\n"
        "send 1b to 2 tag 1\n"  # an unlabelled op
        "}\n"
        "rank 1 {\n"
        "x_1: recv 4b from 0 tag 0\n"
        "calc 12.5\n"
        "}\n"
        "rank 2 { }\n"
    )
    err = parse_error(text)
    assert "rank 2" in str(err) and "recv" in str(err) and err.line == 4  # no recvs at rank 2
    text = text.replace(
        "rank 2 { }\n", "rank 2 {\nr1: recv 8b from 0 tag 9\nr2: recv 1b from 0 tag 1\n}\n"
    )
    g = parse_goal_text(text)
    assert g.label.tolist() == ["a", "b", "", "x_1", "", "r1", "r2"]
    assert g.tag.tolist() == [0, 9, 1, 0, 0, 9, 1]
    assert g.size.tolist() == [4, 8, 1, 4, 0, 8, 1]
    assert g.cost_ns[4] == 12.5
    g.cost_ns[4] = 12.0  # the writer writes integral costs only
    assert edges(g) == {(0, 3, MESSAGE), (1, 5, MESSAGE), (2, 6, MESSAGE)}
    # unlabelled ops have no GOAL label to write: the writer labels every op l1, l2, …
    back = parse_goal_text(write_goal(g, tmp_path / "u.goal").path.read_text())
    assert back.equals(g)
    assert back.label.tolist() == ["l1", "l2", "l3", "l1", "l2", "l1", "l2"]


def test_empty_rank_blocks_and_windows_line_endings():
    g = parse_goal_text("num_ranks 2\r\nrank 0 {\r\nl1: calc 5\r\n}\r\nrank 1 {}\r\n")
    assert g.num_vertices == 1 and g.rank.tolist() == [0]
    assert g.rank_bounds().tolist() == [0, 1, 1]


def test_cpu_and_nic_fill_the_columns_and_are_written_back(tmp_path):
    text = goal(
        "l1: send 4b to 1 tag 2 cpu 1 nic 3\nl2: calc 10 cpu 2\nl3: calc 4 cpu 0\n"
        "---\nl1: recv 4b from 0 tag 2 nic 1\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = parse_goal_text(text, name="c.goal")
    assert g.size.tolist() == [4, 0, 0, 4] and g.tag[[0, 3]].tolist() == [2, 2]
    assert g.cpu.tolist() == [1, 2, 0, 0]
    assert g.nic.tolist() == [3, 0, 0, 1]
    out = tmp_path / "c.goal"
    back = read_goal(write_goal(g, out))
    assert "l1: send 4b to 1 tag 2 cpu 1 nic 3\n" in out.read_text()
    assert "l2: calc 10 cpu 2\n" in out.read_text()
    assert "l3: calc 4\n" in out.read_text()
    assert "l1: recv 4b from 0 tag 2 cpu 0 nic 1\n" in out.read_text()
    assert back.equals(g) and back.cpu.tolist() == g.cpu.tolist()
    assert back.nic.tolist() == g.nic.tolist()


def test_a_file_without_cpu_nic_has_no_columns_and_writes_none(tmp_path):
    g = read_goal(GOAL_DIR / "non_blocking.goal")
    assert g.cpu is None and g.nic is None
    assert " cpu " not in write_goal(g, tmp_path / "n.goal").path.read_text()


def test_cpu_nic_survive_subgraphs_and_npz(tmp_path):
    g = parse_goal_text(goal("l1: calc 10 cpu 2\nl2: calc 3 cpu 1\nl3: calc 1\n---\n"))
    sub = g.subgraph(np.array([False, True, True]))
    text = write_goal(sub, tmp_path / "s.goal").path.read_text()
    assert "calc 3 cpu 1\n" in text and "cpu 2" not in text
    g.save(tmp_path / "g.npz")
    back = read_goal(write_goal(ExecutionGraph.load(tmp_path / "g.npz"), tmp_path / "g.goal"))
    assert back.cpu.tolist() == [2, 1, 0]


def test_cpu_nic_above_txt2bins_8_bits_are_refused():
    err = parse_error(goal("l1: calc 10 cpu 256\n---\n"))
    assert err.line == 3 and "cpu 256 is above 255" in str(err)
    err = parse_error(goal("l1: send 4b to 1 tag 0 nic 300\n---\nl1: recv 4b from 0 tag 0\n"))
    assert err.line == 3 and "nic 300" in str(err)


def test_lenient_demoted_op_keeps_its_cpu_but_not_its_nic():
    text = goal("l1: send 8b to 1 tag 0 cpu 1 nic 2\n---\nl1: recv 4b from 0 tag 0\n")
    with pytest.warns(UserWarning, match="problem"):
        g = parse_goal_text(text, lenient=True)
    assert g.kind.tolist() == [CALC, CALC]
    assert g.cpu.tolist() == [1, 0] and g.nic is None


# --------------------------------------------------------------------------- matching


def test_wildcard_resolution_by_hand():
    text = goal(
        "a: send 8b to 2 tag 1\nb: send 8b to 2 tag 2\nz: send 4b to 2 tag 3\n"
        "---\n"
        "c: calc 5\nd: send 8b to 2 tag 1\n"
        "---\n"
        "e: recv 8b from 1 tag 1\n"  # exact: takes d
        "w1: recv 8b from -1 tag -1\n"  # earliest remaining fitting send: a (pos 0 in rank 0)
        "w2: recv 8b from -1 tag 2\n"  # b
        "w3: recv 4b from 0 tag -1\n",  # z (size 4 fits only z)
        ranks=3,
    )
    g = parse_goal_text(text)
    a, b, z, d, e, w1, w2, w3 = 0, 1, 2, 4, 5, 6, 7, 8
    sends, recvs = g.messages()
    assert dict(zip(recvs.tolist(), sends.tolist(), strict=True)) == {e: d, w1: a, w2: b, w3: z}
    assert g.peer[[w1, w2, w3]].tolist() == [0, 0, 0]
    assert g.tag[[w1, w2, w3]].tolist() == [1, 2, 3]
    assert g.meta["wildcards_resolved"] == 3


def test_resolved_wildcards_round_trip_as_exact_peers(tmp_path):
    text = goal("a: send 8b to 1 tag 4\n---\nw: recv 8b from -1 tag -1\n")
    g = parse_goal_text(text)
    out = write_goal(g, tmp_path / "w.goal")
    assert "w: recv 8b from 0 tag 4" in out.path.read_text()
    back = read_goal(out)
    assert back.equals(g, labels=True) and back.meta["wildcards_resolved"] == 0


def test_wildcard_prefers_earlier_position_in_senders_block_then_lower_rank():
    text = goal(
        "c: calc 1\nx: send 1b to 2 tag 0\n---\ny: send 1b to 2 tag 0\n---\n"
        "w1: recv 1b from -1 tag 0\nw2: recv 1b from -1 tag 0\n",
        ranks=3,
    )
    g = parse_goal_text(text)
    sends, recvs = g.messages()
    # y is op 0 of rank 1, x is op 1 of rank 0: y comes first
    assert dict(zip(recvs.tolist(), sends.tolist(), strict=True)) == {3: 2, 4: 1}
    assert g.peer[[3, 4]].tolist() == [1, 0]


def test_unmatched_send_is_an_error_naming_its_line():
    err = parse_error(
        goal("l1: send 4b to 1 tag 1\nl2: send 4b to 1 tag 2\n---\nl1: recv 4b from 0 tag 1\n")
    )
    assert err.path == "t.goal" and err.line == 4
    assert "send 4b to 1 tag 2 has no matching recv at rank 1" in str(err)
    assert str(err).startswith("t.goal:4: ")


def test_unmatched_wildcard_recv_is_an_error():
    err = parse_error(goal("l1: calc 1\n---\nl1: recv 4b from -1 tag -1\n"))
    assert err.line == 6 and "any source, any tag" in str(err)


def test_size_mismatch_of_a_fifo_pair_is_an_error():
    err = parse_error(goal("l1: send 8b to 1 tag 0\n---\nl1: recv 4b from 0 tag 0\n"))
    assert err.line == 6 and "sizes differ" in str(err) and "line 3" in str(err)


def test_lenient_turns_unmatched_ops_into_zero_cost_calcs():
    text = goal(
        "l1: send 4b to 1 tag 1\nl2: calc 5\nl2 requires l1\nl3: send 4b to 1 tag 9\n"
        "---\nl1: recv 4b from 0 tag 1\n"
    )
    with pytest.warns(UserWarning, match="1 problem"):
        g = parse_goal_text(text, name="t.goal", lenient=True)
    assert g.kind.tolist() == [SEND, CALC, CALC, RECV]
    assert g.cost_ns[2] == 0.0 and g.size[2] == 0 and g.peer[2] == 0
    assert edges(g) == {(0, 1, REQUIRES), (0, 3, MESSAGE)}
    assert g.meta["warning_count"] == 1
    assert g.meta["warnings"][0].startswith("t.goal:6: send 4b to 1 tag 9")


def test_lenient_skips_bad_lines_and_counts_them():
    text = goal(
        "l1: calc 5\nl2: sned 4b to 1\nl3 requires l2\nl4: calc 6\nl4 requires l1\n"
        "l1: calc 7\n---\nl1: calc 1\n"
    )
    with pytest.warns(UserWarning, match="3 problem"):
        g = parse_goal_text(text, name="t.goal", lenient=True)
    assert g.num_vertices == 4  # l2 skipped; the duplicate l1 kept, its label stays with line 3
    assert edges(g) == {(0, 1, REQUIRES)}
    assert [w.split(": ", 1)[0] for w in g.meta["warnings"]] == ["t.goal:4", "t.goal:5", "t.goal:8"]


# --------------------------------------------------------------------------- malformed input


def test_missing_num_ranks():
    err = parse_error("rank 0 {\nl1: calc 5\n}\n")
    assert err.line == 1 and "before the 'num_ranks <P>' line" in str(err)
    err = parse_error("// nothing here\n")
    assert "missing 'num_ranks <P>'" in str(err)


def test_rank_blocks_out_of_order():
    err = parse_error("num_ranks 2\nrank 1 {\n}\nrank 0 {\n}\n")
    assert err.line == 2 and "rank 0 was expected" in str(err)


def test_rank_block_missing_at_the_end():
    err = parse_error("num_ranks 3\nrank 0 {\n}\nrank 1 {\n}\n")
    assert "rank 2 has no block" in str(err)


def test_rank_outside_num_ranks():
    err = parse_error("num_ranks 1\nrank 0 {\n}\nrank 1 {\n}\n")
    assert err.line == 4 and "outside 0..0" in str(err)


def test_duplicate_label():
    err = parse_error(goal("l1: calc 5\nl2: calc 6\nl1: calc 7\n---\n"))
    assert err.line == 5 and "duplicate label 'l1' in rank 0 (first defined on line 3)" in str(err)


def test_unknown_operation_keyword():
    err = parse_error(goal("l1: sned 4b to 1 tag 0\n---\n"))
    assert err.line == 3 and "unknown operation 'sned'" in str(err)


def test_unknown_dependency_keyword():
    err = parse_error(goal("l1: calc 5\nl2: calc 5\nl1 needs l2\n---\n"))
    assert err.line == 5 and "unknown dependency 'needs'" in str(err)


def test_unknown_statement():
    err = parse_error(goal("l1: calc 5\nbarrier\n---\n"))
    assert err.line == 4 and "unknown statement 'barrier'" in str(err)


def test_size_without_b():
    err = parse_error(goal("l1: send 4 to 1 tag 0\n---\n"))
    assert err.line == 3 and "size must be a byte count such as '4b', got '4'" in str(err)


def test_negative_or_non_numeric_values():
    assert "got '-4b'" in str(parse_error(goal("l1: send -4b to 1\n---\n")))
    assert "expected a tag number" in str(parse_error(goal("l1: send 4b to 1 tag x\n---\n")))
    assert "not a non-negative number" in str(parse_error(goal("l1: calc -5\n---\n")))
    assert "too large for a float64" in str(parse_error(goal("l1: calc 1e999\n---\n")))
    err = parse_error(goal("l1: send 99999999999999999999b to 1\n---\n"))
    assert err.line == 3 and "above 2^63 − 1, the largest signed 64-bit integer" in str(err)


def test_peer_outside_ranks():
    err = parse_error(goal("l1: send 4b to 2 tag 0\n---\n"))
    assert err.line == 3 and "destination rank 2 is outside 0..1 (num_ranks 2)" in str(err)
    err = parse_error(goal("l1: calc 1\n---\nl1: recv 4b from 7 tag 0\n"))
    assert err.line == 6 and "source rank 7 is outside 0..1" in str(err)


def test_wildcards_are_only_for_recvs():
    assert "only a recv source" in str(parse_error(goal("l1: send 4b to -1\n---\n")))
    assert "only for recvs" in str(parse_error(goal("l1: send 4b to 1 tag -1\n---\n")))


def test_optional_parts_out_of_order():
    err = parse_error(goal("l1: send 4b to 1 cpu 0 tag 1\n---\n"))
    assert err.line == 3 and "order tag, cpu, nic" in str(err)
    err = parse_error(goal("l1: calc 5 nic 1\n---\n"))
    assert "a calc takes only 'cpu'" in str(err)


def test_bad_labels():
    assert "not [a-zA-Z]" in str(parse_error(goal("1x: calc 5\n---\n")))
    assert "not [a-zA-Z]" in str(parse_error(goal("a-b: calc 5\n---\n")))
    assert "GOAL keyword" in str(parse_error(goal("rank: calc 5\n---\n")))
    err = parse_error(goal(": calc 5\n---\n"))
    assert err.line == 3 and "empty label" in str(err)


def test_forward_reference_and_self_dependency():
    err = parse_error(goal("l1: calc 5\nl1 requires l2\nl2: calc 6\n---\n"))
    assert err.line == 4 and "label 'l2' is not defined before this line in rank 0" in str(err)
    err = parse_error(goal("l1: calc 5\nl1 irequires l1\n---\n"))
    assert err.line == 4 and "cannot depend on itself" in str(err)


def test_labels_do_not_leak_across_ranks():
    err = parse_error(goal("a: calc 5\n---\nb: calc 5\nb requires a\n"))
    assert err.line == 7 and "'a' is not defined before this line in rank 1" in str(err)


def test_unterminated_block():
    err = parse_error("num_ranks 1\nrank 0 {\nl1: calc 5\n")
    assert err.line == 2 and "block of rank 0 is not closed" in str(err)
    err = parse_error("num_ranks 2\nrank 0 {\nl1: calc 5\nrank 1 {\n}\n")
    assert err.line == 4 and "missing '}'" in str(err)


def test_unterminated_comment():
    err = parse_error("num_ranks 1\nrank 0 {\n/* l1: calc 5\n}\n")
    assert err.line == 3 and "unterminated /* comment" in str(err)


def test_structure_errors_outside_blocks():
    assert "'}' outside a rank block" in str(parse_error("num_ranks 1\n}\n"))
    assert "outside a rank block" in str(parse_error("num_ranks 1\nl1: calc 5\n"))
    err = parse_error("num_ranks 1\nnum_ranks 1\n")
    assert err.line == 2 and "second 'num_ranks'" in str(err)
    assert "P ≥ 1" in str(parse_error("num_ranks 0\n"))


def test_structure_errors_stay_errors_when_lenient():
    err = parse_error("num_ranks 2\nrank 1 {\n}\n", lenient=True)
    assert err.line == 2


def test_non_ascii_outside_comments():
    g = parse_goal_text(goal("l1: calc 5 // 5 µs? no, ns\n---\n"))
    assert g.cost_ns.tolist() == [5.0]
    err = parse_error(goal("l1: calc 5µ\n---\n"))
    assert err.line == 3 and "non-ASCII" in str(err)


def test_missing_file():
    with pytest.raises(TraceError, match="cannot read GOAL file"):
        read_goal(GOAL_DIR / "no_such.goal")


def test_reader_emits_no_warning_on_clean_files():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_goal(GOAL_DIR / "binary_tree_32.goal")


def test_extreme_costs(tmp_path):
    costs = [0.1, 1e-300, 5e-324, 2.0**63 + 2048, 2.0**64 - 2048, 0.0]
    g = calc_chain(costs)
    out = write_goal(g, tmp_path / "costs.goal")
    assert read_goal(out).cost_ns.tolist() == [0.0, 0.0, 0.0, 2.0**63 + 2048, 2.0**64 - 2048, 0]
    assert out.costs_rounded == 3 and out.rounding_max_ns == 0.1
    text = out.path.read_text()
    assert "l4: calc 9223372036854777856\n" in text  # exact above 2**53 and 2**63
    assert "l5: calc 18446744073709549568\n" in text
    for too_large in (2.0**64, 1e300):
        with pytest.raises(GraphError, match="2\\^64 ns"):
            write_goal(calc_chain([1.0, too_large]), tmp_path / "big.goal")


def test_calc_cost_too_large_for_float64():
    err = parse_error(goal("l1: calc 1" + "0" * 400 + "\n---\n"))
    assert err.line == 3 and "too large for a float64" in str(err)


def test_lenient_size_mismatch_demotes_both_and_keeps_them_from_wildcards():
    text = goal(
        "l1: send 8b to 1 tag 0\n---\nl1: recv 4b from 0 tag 0\nl2: recv 8b from -1 tag -1\n"
    )
    with pytest.warns(UserWarning, match="2 problem"):
        g = parse_goal_text(text, lenient=True)
    assert g.kind.tolist() == [CALC, CALC, CALC]
    assert g.num_edges == 0


def test_chunked_scanning_gives_the_same_graph_and_line_numbers(monkeypatch):
    import llamp.ingest.goal as goal_module

    whole = {name: read_goal(GOAL_DIR / name) for name in SHARED}
    monkeypatch.setattr(goal_module, "_CHUNK_CHARS", 16)
    for name in SHARED:
        assert read_goal(GOAL_DIR / name).equals(whole[name], labels=True)
    text = goal(
        "l1: calc 1\n" + "".join(f"x{i}: calc {i}\n" for i in range(30)) + "l1: calc 2\n---\n"
    )
    err = parse_error(text)
    assert err.line == 34 and "first defined on line 3" in str(err)


# --------------------------------------------------------------------------- rounding and T


def test_runtime_of_the_written_graph_is_within_the_rounding(tmp_path):
    """A noisy stencil (non-integral costs everywhere): T of the file read back differs from
    T of the graph by at most the total rounding, at every point of a small L/G/o/S grid. T is
    the longest path of the event graph and a path passes each calc once, so Σ|Δcost| bounds it.
    """
    from llamp.ingest.synthetic import stencil_graph
    from llamp.lp import engine_for
    from llamp.params import LogGPS

    graph = stencil_graph(ranks=8, iterations=20, halo_bytes=80_000, alltoall_every=5)
    assert np.count_nonzero(graph.cost_ns != np.rint(graph.cost_ns)) >= 400
    written = write_goal(graph, tmp_path / "stencil.goal")
    back = read_goal(written)
    assert written.costs_rounded == int(np.count_nonzero(graph.cost_ns != np.rint(graph.cost_ns)))
    assert 0 < written.rounding_max_ns <= 0.5
    assert written.rounding_total_ns == pytest.approx(np.abs(back.cost_ns - graph.cost_ns).sum())
    before, after = engine_for(graph), engine_for(back)
    models = [{}, {"progress": "wait"}, {"nic": "serial", "g": 500.0}]
    for L in (0.0, 3000.0, 30000.0):
        for G in (0.0, 6.0):
            for o, S in ((1500.0, 65535), (0.0, 1 << 30)):
                for model in models:
                    # a fixed order: under the schedule order rounding may reorder a resource
                    params = LogGPS(L=L, o=o, G=G, S=S, order="program", **model)
                    t0, t1 = before.runtime(params), after.runtime(params)
                    assert t0 > 0 and abs(t1 - t0) <= written.rounding_total_ns + 1e-9 * t0


def test_rounding_bound_is_reached_on_a_chain(tmp_path):
    """On one chain every rounding error lies on the critical path: |ΔT| is the signed sum."""
    from llamp.lp import engine_for
    from llamp.params import LogGPS

    g = calc_chain([0.5, 1.5, 2.5, 0.4, 2.6])  # written 0, 2, 2, 0, 3: Δ = −.5 +.5 −.5 −.4 +.4
    written = write_goal(g, tmp_path / "chain.goal")
    back = read_goal(written)
    params = LogGPS(L=3000.0, o=1500.0, G=0.0, S=65535)
    assert engine_for(g).runtime(params) == pytest.approx(7.5)
    assert engine_for(back).runtime(params) == 7.0
    assert written.rounding_total_ns == pytest.approx(2.3)  # |ΔT| = 0.5 ≤ 2.3
    g2 = calc_chain([0.4, 1.4, 2.4])  # all rounded down: the bound is attained
    written = write_goal(g2, tmp_path / "down.goal")
    assert engine_for(g2).runtime(params) - engine_for(read_goal(written)).runtime(
        params
    ) == pytest.approx(written.rounding_total_ns)


TWO_CPUS = """num_ranks 2
rank 0 {
c0: calc 50000 cpu 0
s0: send 1024b to 1 tag 0 cpu 0 nic 0
s0 requires c0
c1: calc 50000 cpu 1
s1: send 1024b to 1 tag 1 cpu 1 nic 0
s1 requires c1
}
rank 1 {
r0: recv 1024b from 0 tag 0 cpu 0 nic 0
d0: calc 20000 cpu 0
d0 requires r0
r1: recv 1024b from 0 tag 1 cpu 1 nic 0
d1: calc 20000 cpu 1
d1 requires r1
}
"""


def test_cpu_annotations_reach_the_model(tmp_path):
    """Two CPU streams per rank: each send's o is charged on its own CPU, so both messages leave
    at 50 µs: T = 50000 + o + L + o + 20000 = 76,000 ns (LogGOPSim gives the same). On one CPU
    stream the program order runs c0, s0, c1, s1: s1 starts at 101,500 and d1 ends at
    101,500 + 2o + L + 20,000 = 127,500 ns."""
    from llamp.lp import engine_for
    from llamp.params import LogGPS

    params = LogGPS(L=3000.0, o=1500.0, G=0.0, S=100_000)
    two = parse_goal_text(TWO_CPUS, name="two_cpus.goal")
    assert two.cpu.tolist() == [0, 0, 1, 1, 0, 0, 1, 1]
    assert engine_for(two).runtime(params) == 76_000.0
    back = read_goal(write_goal(two, tmp_path / "two.goal"))
    assert engine_for(back).runtime(params) == 76_000.0
    one = parse_goal_text(re.sub(r" cpu \d", "", TWO_CPUS), name="one_cpu.goal")
    assert one.cpu is None
    assert engine_for(one).runtime(params.with_(order="program")) == 127_500.0


# --------------------------------------------------------------------------- the tokenizer


def test_labels_switch_from_numbered_to_named_mid_block_and_grow_the_table():
    """l1, l2 … (read by number) until a named label; then every label of the block is in the
    hash table, including the numbered ones before it; 3000 named ops grow the table."""
    ops = ["l1: calc 1", "l2: calc 2", "l2 requires l1", "first: calc 3", "first requires l2"]
    ops += [f"x{i}: calc {i}" for i in range(3000)]
    ops += [f"x{i} requires x{i - 1}" for i in range(1, 3000)] + ["x0 requires l1"]
    g = parse_goal_text(goal("\n".join(ops) + "\n---\nl1: calc 9\nl2: calc 8\nl1 requires l2\n"))
    assert g.num_vertices == 3003 + 2
    assert g.label[:4].tolist() == ["l1", "l2", "first", "x0"] and g.label[3002] == "x2999"
    assert g.label[3003:].tolist() == ["l1", "l2"]
    assert (0, 1, REQUIRES) in edges(g) and (1, 2, REQUIRES) in edges(g)
    assert (0, 3, REQUIRES) in edges(g) and (3003 + 1, 3003, REQUIRES) in edges(g)
    assert all((2 + i, 3 + i, REQUIRES) in edges(g) for i in range(1, 3000))


def test_costs_are_converted_exactly_as_python_floats():
    costs = ["0.1", "1e-05", "123456789012345678901.", "5.", ".5", "1.7976931348623157e308", "3"]
    costs += ["0.30000000000000004", "9007199254740994", "2.5e-320"]
    body = "".join(f"c{i}: calc {c}\n" for i, c in enumerate(costs))
    g = parse_goal_text(goal(body + "---\n"))
    assert g.cost_ns.tolist() == [float(c) for c in costs]


def test_an_integer_cost_a_float64_would_round_is_refused_with_the_line():
    """2^53 + 1 ns is not a float64: refused, never read as 2^53 (2^53 + 2 is one: kept)."""
    err = parse_error(goal("l1: calc 5\nl2: calc 9007199254740993\n---\n"))
    assert err.line == 4 and "calc cost 9007199254740993 is an integer above 2^53" in str(err)
    assert "read as 9007199254740992" in str(err)


def test_numbers_beyond_64_bits_are_refused_with_the_line():
    err = parse_error(goal("l1: send 99999999999999999999b to 1 tag 0\n---\n"))
    assert err.line == 3 and "size 99999999999999999999 is above 2^63 − 1" in str(err)
    err = parse_error(goal("l1: calc 1\nl2: send 4b to 1 tag 9223372036854775808\n---\n"))
    assert err.line == 4 and "tag 9223372036854775808 is above 2^63 − 1" in str(err)


def test_numbered_labels_of_a_large_graph_are_not_stored(tmp_path, monkeypatch):
    """Above the size limit, l<k> labels (k = position in the block) are left out: the writer
    numbers ops the same way, so the file comes back byte for byte."""
    import llamp.ingest.goal as goal_module
    from llamp.ingest.synthetic import stencil_graph

    src = write_goal(stencil_graph(ranks=4, iterations=3), tmp_path / "s.goal").path
    kept = read_goal(src)
    local = np.arange(kept.num_vertices) - kept.rank_bounds()[kept.rank]
    assert kept.label.tolist() == [f"l{k + 1}" for k in local.tolist()]
    monkeypatch.setattr(goal_module, "_CANONICAL_LABELS_KEPT", 2)
    g = read_goal(src)
    assert g.equals(kept) and g.label is None and "goal_labels" in g.meta
    out = write_goal(g, tmp_path / "again.goal")
    assert out.path.read_bytes() == src.read_bytes()


def test_a_line_longer_than_the_chunk_is_read_whole(monkeypatch):
    import llamp.ingest.goal as goal_module

    monkeypatch.setattr(goal_module, "_CHUNK_CHARS", 8)
    g = parse_goal_text(goal("a_very_long_label_indeed: calc 12345    // and a comment\n---\n"))
    assert g.label.tolist() == ["a_very_long_label_indeed"] and g.cost_ns.tolist() == [12345.0]


def test_block_comment_across_chunks_keeps_lines(monkeypatch):
    import llamp.ingest.goal as goal_module

    monkeypatch.setattr(goal_module, "_CHUNK_CHARS", 16)
    text = goal("l1: calc 5 /* a comment\nover three\nlines */ l2: calc 6\nl3: calc x\n---\n")
    err = parse_error(text)
    assert err.line == 6 and "calc cost 'x'" in str(err)
    g = parse_goal_text(text.replace("calc x", "calc 7"))
    assert g.label[:3].tolist() == ["l1", "l2", "l3"] and g.cost_ns[:3].tolist() == [5, 6, 7]


def test_progress_reports_bytes_read_on_stderr(capsys):
    from tqdm import tqdm

    g = read_goal(GOAL_DIR / "binary_tree_32.goal", progress=True)
    err = capsys.readouterr().err
    size = (GOAL_DIR / "binary_tree_32.goal").stat().st_size
    # the bar names the stage and counts bytes against the file's size (B/s: the rate)
    assert "reading GOAL" in err and f"/{tqdm.format_sizeof(size)} " in err and "B/s" in err
    assert g.num_ranks == 32


def test_tokenizer_and_grammar_agree_on_random_op_lines():
    """Seeded random op lines: the compiled tokenizer takes exactly the lines the grammar
    (``_check_op``) accepts, and hands every other one back with a reason (lenient: skipped)."""
    import random

    from llamp.ingest.goal import _check_op, _LineProblem

    words = ["send", "recv", "calc", "4b", "4", "b", "0b", "to", "from", "1", "-1", "0", "tag"]
    words += ["cpu", "nic", "7", "255", "256", "1.5", "1e3", ".5", "5.", "1e", "x", "b4", "-"]
    rng = random.Random(15)
    for _ in range(600):
        body = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 10)))
        label = rng.choice(["", "a: ", "a:", " : ", "a b: ", "rank: "])
        line = label + body
        toks = line.split()
        if len(toks) == 3 and toks[1] in ("requires", "irequires"):
            continue
        head, colon, rest = line.partition(":")
        try:
            if colon:
                if not head.strip():
                    raise _LineProblem("empty label")
                _check_op(rest.split())
            elif toks[0] in ("send", "recv", "calc"):
                _check_op(toks)
            else:
                raise _LineProblem("not an op")
            accepted = True
        except _LineProblem:
            accepted = False
        text = goal(f"{line}\n---\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = parse_goal_text(text, lenient=True)
        assert (g.num_vertices == 1) == accepted, line  # a bad peer or partner demotes, keeps
        if not accepted:
            assert g.meta.get("warning_count", 0) >= 1, line
