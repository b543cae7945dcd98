"""Provider settings: which `spec.traffic` fields each provider needs and accepts. A missing or
misplaced setting is an :class:`InputError` at the spec's file:line, before anything renders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dgdgen.errors import InputError

if TYPE_CHECKING:
    from dgdgen.plan.load import LoadedSpec

HTTPROUTE_PROVIDERS = ("gateway-api", "gamma", "inference-pool")
# Which provider each settings block belongs to.
_OWNER = {
    "gateway": ("gateway-api", "inference-pool"),
    "gamma": ("gamma",),
    "inference_pool": ("inference-pool",),
    "haproxy": ("haproxy",),
    "hostnames": ("gateway-api", "inference-pool"),  # a mesh route ignores hostnames
    "backend_request_timeout": HTTPROUTE_PROVIDERS,
    "sticky": ("haproxy",),
    "switch_service": ("none",),
}
_REQUIRED = {"gateway-api": "gateway", "inference-pool": "gateway", "gamma": "gamma"}
_EXAMPLE = {
    "gateway": "gateway: {name: inference-gateway, namespace: gateway-system}",
    "gamma": "gamma: {service: qwen}",
}
_ALIAS = {"inference_pool": "inferencePool", "backend_request_timeout": "backendRequestTimeout",
          "switch_service": "switchService"}


def check(loaded: LoadedSpec) -> None:
    """Refuse a provider without its required settings, settings of another provider, and
    combinations a provider cannot honour."""
    from dgdgen.spec import parse_duration

    traffic: Any = loaded.spec.spec.traffic
    provider = traffic.provider.value
    base = ("spec", "traffic")
    need = _REQUIRED.get(provider)
    if need is not None and getattr(traffic, need) is None:
        field = base + (need,)
        raise InputError(
            f"traffic provider {provider!r} needs `{need}` settings",
            location=loaded.location(base + ("provider",)),
            field=field,
            hint=f"add under spec.traffic: {_EXAMPLE[need]}",
        )
    for attr, owners in _OWNER.items():
        given = attr in traffic.model_fields_set and getattr(traffic, attr) not in (None, [])
        if given and provider not in owners:
            field = base + (_ALIAS.get(attr, attr),)
            hint = f"it is used by: {', '.join(owners)}"
            message = f"`{_ALIAS.get(attr, attr)}` does not apply to traffic provider {provider!r}"
            if attr == "sticky":
                message = (
                    f"sticky sessions are not available with provider {provider!r}: the Gateway "
                    "API standard channel has no session persistence (sessionPersistence is "
                    "experimental-only and not in the v1 HTTPRoute CRD)"
                )
                hint = "use provider haproxy (stick table), or see docs/traffic.md"
            raise InputError(message, location=loaded.location(field), field=field, hint=hint)
    if provider == "haproxy" and "path" in traffic.model_fields_set and traffic.path != "/":
        field = base + ("path",)
        raise InputError(
            "the haproxy provider forwards every path to the frontends; `path` applies to the "
            "HTTPRoute providers",
            location=loaded.location(field), field=field,
        )
    if traffic.backend_request_timeout is not None:
        request = parse_duration(traffic.request_timeout)
        backend = parse_duration(traffic.backend_request_timeout)
        # CEL on HTTPRoute timeouts (Gateway API v1.6.1): backendRequest ≤ request unless 0s.
        if request and backend > request:
            field = base + ("backendRequestTimeout",)
            raise InputError(
                f"backendRequestTimeout ({traffic.backend_request_timeout}) is longer than "
                f"requestTimeout ({traffic.request_timeout})",
                location=loaded.location(field), field=field,
            )
