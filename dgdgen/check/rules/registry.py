"""The explicit rule registry: adding a rule touches its module, one line here, and its case
file in policies/cases/ (STYLE.md principle 3)."""

from __future__ import annotations

from types import ModuleType

from dgdgen.check.rules import (
    ana401_analysis_nan_unguarded,
    ana402_analysis_empty_unguarded,
    dgd001_suppression_without_reason,
    dgd101_dynamo_namespace_prefix,
    dgd102_shared_frontend,
    dgd103_deprecated_flag,
    dgd104_removed_flag,
    dgd105_single_replica_rolling_update,
    dgd106_missing_migration_limit,
    dgd107_frontend_namespace_prefix,
    dgd108_prefill_decode_mismatch,
    dgd109_value_not_visible,
    dgd201_mdc_change_in_place,
    dgd202_kv_transfer_change_in_place,
    dgd203_runtime_change_in_place,
    dgd204_rollout_bookkeeping_removed,
    dgd205_derived_default_in_place,
    dgd206_runtime_upgrade_skips_minor,
    rte301_route_zero_weights,
    rte302_route_backend_missing,
)

_MODULES: tuple[ModuleType, ...] = (
    dgd001_suppression_without_reason,
    dgd101_dynamo_namespace_prefix,
    dgd102_shared_frontend,
    dgd103_deprecated_flag,
    dgd104_removed_flag,
    dgd105_single_replica_rolling_update,
    dgd106_missing_migration_limit,
    dgd107_frontend_namespace_prefix,
    dgd108_prefill_decode_mismatch,
    dgd109_value_not_visible,
    dgd201_mdc_change_in_place,
    dgd202_kv_transfer_change_in_place,
    dgd203_runtime_change_in_place,
    dgd204_rollout_bookkeeping_removed,
    dgd205_derived_default_in_place,
    dgd206_runtime_upgrade_skips_minor,
    rte301_route_zero_weights,
    rte302_route_backend_missing,
    ana401_analysis_nan_unguarded,
    ana402_analysis_empty_unguarded,
)

RULES: dict[str, ModuleType] = {m.RULE.code: m for m in _MODULES}
