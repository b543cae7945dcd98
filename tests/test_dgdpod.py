"""The DGD model's typed pod view (dgdgen.model.dgdpod, Dgd.pod): parsed once, typed, rebuilt after an
edit the model was told of."""

from __future__ import annotations

from dgdgen.model.dgd import Dgd, read_dgds
from dgdgen.model.dgdpod import (
    CONFIG_MAP_KEY_REF,
    FIELD_REF,
    RESOURCE_FIELD_REF,
    SECRET_KEY_REF,
    ConfigMapSource,
)
from dgdgen.yamlio import load_documents_fast

V1BETA1 = """\
apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  env: [{name: DYN_A, value: "1"}]
  components:
  - name: w
    type: worker
    podTemplate:
      metadata: {labels: {team: x}, annotations: {a: true}}
      spec:
        volumes:
        - {name: cfg, configMap: {name: cm1, items: [{key: k, path: p.yaml}]}}
        - name: proj
          projected: {sources: [{configMap: {name: cm2}}, {secret: {name: s}}]}
        - {name: scratch, emptyDir: {}}
        containers:
        - name: sidecar
        - name: main
          args: [python3, -m, dynamo.vllm]
          envFrom:
          - {prefix: P_, configMapRef: {name: cm3, optional: true}}
          - {secretRef: {name: s2}}
          env:
          - {name: LIT, value: {x: 1}}
          - {name: B, value: false}
          - {name: CM, valueFrom: {configMapKeyRef: {name: cm4, key: kk}}}
          - {name: SEC, valueFrom: {secretKeyRef: {name: s3}}}
          - {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
          - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
          volumeMounts:
          - {name: cfg, mountPath: /etc/cfg}
          - {name: proj, mountPath: /etc/proj, subPath: sub}
"""


def _dgd(text: str) -> Dgd:
    return read_dgds(load_documents_fast(text, "g.yaml"))[0]


def test_the_view_is_typed_and_keeps_the_order_and_paths() -> None:
    d = _dgd(V1BETA1)
    pod = d.pod("w")
    main = ("spec", "components", 0, "podTemplate", "spec", "containers", 1)
    assert [(v.name, v.value) for v in pod.dgd_env] == [("DYN_A", "1")]
    assert pod.service_env == ()
    assert [(v.name, v.value) for v in pod.env[:2]] == [("LIT", '{"x": 1}'), ("B", "false")]
    assert [(v.ref.kind, v.ref.name, v.ref.key, v.ref.field) for v in pod.env[2:]
            if v.ref is not None] == [
        (CONFIG_MAP_KEY_REF, "cm4", "kk", None), (SECRET_KEY_REF, "s3", "None", None),
        (FIELD_REF, "", "", "metadata.name"), (RESOURCE_FIELD_REF, "", "", "limits.memory")]
    assert pod.env[2].path == (*main, "env", 2)
    assert [(s.kind, s.name, s.prefix, s.optional) for s in pod.env_from] == [
        ("configMap", "cm3", "P_", True), ("secret", "s2", "", False)]
    assert [(m.volume, m.mount_path, m.sub_path) for m in pod.mounts] == [
        ("cfg", "/etc/cfg", None), ("proj", "/etc/proj", "sub")]
    assert dict(pod.configmap_volumes) == {
        "cfg": (ConfigMapSource("cm1", {"p.yaml": "k"}),), "proj": (ConfigMapSource("cm2", None),)}
    assert (dict(pod.labels), dict(pod.annotations)) == ({"team": "x"}, {"a": "true"})
    assert not pod.multinode and not pod.replicas_written


def test_the_view_is_built_once_and_again_after_refresh() -> None:
    d = _dgd(V1BETA1)
    first = d.pod("w")
    assert d.pod("w") is first
    main = d.main_container("w")
    assert main is not None
    main["env"] = [{"name": "NEW", "value": "x"}]
    d.component_doc("w")["replicas"] = 2
    d.refresh()
    again = d.pod("w")
    assert [v.name for v in again.env] == ["NEW"] and again.replicas_written
    copied = d.copy()
    assert copied.pod("w") == again and copied.pod("w") is not again


def test_v1alpha1_service_envs_and_merged_annotations() -> None:
    d = _dgd("""\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: g}
spec:
  envs: [{name: A, value: "1"}]
  services:
    w:
      componentType: worker
      replicas: 1
      multinode: {nodeCount: 2}
      runtimeVersionOverride: "1.6"
      annotations: {a: "1", b: "1"}
      envs: [{name: S, value: "2"}, {value: no name, skipped}]
      extraPodMetadata: {annotations: {b: "2"}}
      extraPodSpec: {mainContainer: {image: x}}
""")
    pod = d.pod("w")
    assert [(v.name, v.path) for v in pod.service_env] == [("S", ("spec", "services", "w",
                                                                   "envs", 0))]
    assert [v.path for v in pod.dgd_env] == [("spec", "envs", 0)]
    assert dict(pod.annotations) == {"a": "1", "b": "2"}
    assert pod.multinode and pod.replicas_written and pod.runtime_version_override == "1.6"
    assert pod.env == () and pod.mounts == ()
