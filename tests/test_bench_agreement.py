"""``bench_agreement`` (llamp against LogGOPSim's committed T on the reference set): the models
it takes from the installed LogGPS, one agreement measured by hand, and the per-pattern
summary."""

from __future__ import annotations

import dataclasses

from benchmarks import bench_agreement as ba
from llamp import config
from llamp.params import LogGPS


def test_the_models_are_every_combination_of_the_installed_choices():
    fields = {f.name for f in dataclasses.fields(LogGPS)}
    expected = len(config.PROGRESS_MODELS) * len(config.NIC_MODELS)
    if "order" in fields:
        expected *= len(config.ORDER_MODELS)
    if "rendezvous" in fields:
        expected *= len(config.RENDEZVOUS_MODELS)
    models = ba.models()
    assert len(models) == expected == len({tuple(m.items()) for m in models})
    for m in models:
        LogGPS(**m)  # every combination is a valid configuration


def test_late_receive_agreement_counts_the_points_where_llamp_is_exact():
    # A 1000 B message that arrives during rank 1's 20 µs calc: LogGOPSim charges o + 999·G
    # once the calc is done (27,494 ns at G = 6); the program order (`overlap`) charges the
    # 999·G to the transfer, which the calc hides, and o after it (21,500). They differ only
    # where G = 6 and the message arrives during the calc (L = 0, 3, 10 µs): 33 of 36 agree.
    facts = ba.load_facts()
    name = "minimal/late-receive.goal"
    assert facts["graphs"][name]["g0_G6"][1] == 27494
    assert facts["graphs"][name]["g0_G0"][1] == 21500
    result = ba.agreement(
        ba.read_reference(name), name, {"progress": "wait", "nic": "overlap"}, facts
    )
    assert (result.exact, result.points) == (33, 36)
    assert abs(result.max_rel - (27494 - 21500) / 27494) < 1e-12


def test_the_summary_groups_schedgen_graphs_by_pattern_and_size():
    assert ba.family("schedgen/gather-p16-eager.goal") == "gather eager"
    assert ba.family("schedgen/resnet-p4.goal") == "schedgen/resnet-p4"
    results = [
        ba.Agreement("schedgen/gather-p4-eager.goal", "m", 0.0, 36, 36),
        ba.Agreement("schedgen/gather-p16-eager.goal", "m", 0.25, 3, 36),
        ba.Agreement("minimal/two-calcs.goal", "m", 0.5, 0, 36),
    ]
    assert ba.summary(results, ["m"]) == [
        ("gather eager", ["25% (1/2)"]),
        ("minimal/two-calcs", ["50% (0/1)"]),
    ]
