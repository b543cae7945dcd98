"""Argo CD / Argo Workflows objects of the shapes dgdgen renders validate, and their rules bite."""

from __future__ import annotations

import copy
from typing import Any

from dgdgen import crd

APPLICATION: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "qwen", "namespace": "argocd",
                 "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
    "spec": {
        "project": "default",
        "source": {"repoURL": "https://git.example.com/r.git", "targetRevision": "main",
                   "path": "rendered/step-01"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "llm"},
        "syncPolicy": {"automated": {"prune": True, "selfHeal": True},
                       "syncOptions": ["ServerSideApply=true"]},
    },
}

APPLICATION_SET: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "ApplicationSet",
    "metadata": {"name": "qwen"},
    "spec": {
        "generators": [{"list": {"elements": [{"cluster": "a", "url": "https://a"}]}}],
        "template": {
            "metadata": {"name": "qwen-{{cluster}}"},
            "spec": {
                "project": "default",
                "source": {"repoURL": "https://g", "targetRevision": "main", "path": "x"},
                "destination": {"server": "{{url}}", "namespace": "llm"},
            },
        },
    },
}

WORKFLOW_TEMPLATE: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "WorkflowTemplate",
    "metadata": {"name": "promote"},
    "spec": {
        "entrypoint": "main",
        "arguments": {"parameters": [{"name": "step", "value": "1"}]},
        "templates": [
            {"name": "main", "steps": [[{"name": "analyze", "template": "analyze"}]]},
            {"name": "analyze", "timeout": "10m",
             "container": {"image": "alpine:3", "command": ["sh", "-c"], "args": ["echo hi"]}},
        ],
    },
}


def test_application() -> None:
    app = copy.deepcopy(APPLICATION)
    assert crd.validate(app) == []
    app["spec"]["syncPolicy"]["automated"]["prun"] = True
    assert [(v.path[-1], v.rule) for v in crd.validate(app)] == [("prun", "unknown-field")]
    del app["spec"]["destination"]
    assert (("spec", "destination"), "required") in [(v.path, v.rule) for v in crd.validate(app)]


def test_application_set() -> None:
    appset = copy.deepcopy(APPLICATION_SET)
    assert crd.validate(appset) == []
    appset["spec"]["template"]["spec"]["sources"] = "not-a-list"
    assert [v.rule for v in crd.validate(appset)][0] == "type"


def test_workflow_template_rules() -> None:
    wt = copy.deepcopy(WORKFLOW_TEMPLATE)
    assert crd.validate(wt) == []
    wt["spec"]["templates"][0]["timeout"] = "5m"
    assert [(v.path, v.message) for v in crd.validate(wt)] == [
        (("spec", "templates"), "timeout cannot be applied to steps or dag templates")
    ]
    wt = copy.deepcopy(WORKFLOW_TEMPLATE)
    wt["spec"]["templates"][1]["script"] = {"image": "alpine:3", "source": "echo"}
    assert [v.message for v in crd.validate(wt)] == ["template must have at most one template type"]


def test_validation_is_fast_enough() -> None:
    import time

    app = copy.deepcopy(APPLICATION)
    wt = copy.deepcopy(WORKFLOW_TEMPLATE)
    crd.validate(app), crd.validate(wt)  # schemas and rules compiled once
    start = time.perf_counter()
    for i in range(100):
        app["metadata"]["name"] = f"qwen-{i}"  # new objects, same sub-values: the usual render
        wt["metadata"]["name"] = f"promote-{i}"
        assert crd.validate(app) == [] and crd.validate(wt) == []
    assert time.perf_counter() - start < 2.0  # a few hundred objects per second, at least
