"""The explicit invariant registry: adding one touches its module and one line here."""

from __future__ import annotations

from types import ModuleType

from dgdgen.cluster.rules import (
    clu101_incomplete_generation_reachable,
    clu102_parallelism_exceeds_gpus,
    clu103_picker_reads_no_frontend_metric,
    clu104_preview_route_outside_candidate,
    clu201_rollback_drops_roll_settings,
    clu202_pods_stop_under_traffic,
    clu203_l4_drain_ignores_pooled_clients,
    clu301_delete_cascades_to_serving,
    clu302_fan_out_moves_every_cluster_at_once,
)

_MODULES: tuple[ModuleType, ...] = (
    clu101_incomplete_generation_reachable,
    clu102_parallelism_exceeds_gpus,
    clu103_picker_reads_no_frontend_metric,
    clu104_preview_route_outside_candidate,
    clu201_rollback_drops_roll_settings,
    clu202_pods_stop_under_traffic,
    clu203_l4_drain_ignores_pooled_clients,
    clu301_delete_cascades_to_serving,
    clu302_fan_out_moves_every_cluster_at_once,
)

RULES: dict[str, ModuleType] = {m.RULE.code: m for m in _MODULES}
