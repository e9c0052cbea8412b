"""Drives batchlet server with the official Python client (Debian
python3-kubernetes). Each scenario prints "ok <name>" or raises.

Usage: python_client.py SCENARIO... (KUBECONFIG names the server).
"""
import sys
import time

from kubernetes import client, config, watch
from kubernetes.stream import stream

NS = "default"


def wait_for(what, fn, timeout=60):
    deadline = time.time() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.time() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.2)


def pod(name, command):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(restart_policy="Never", containers=[
            client.V1Container(name="c", image="busybox", command=command)]))


def job(name, command, suspend=False):
    return client.V1Job(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1JobSpec(suspend=suspend, template=client.V1PodTemplateSpec(
            spec=client.V1PodSpec(restart_policy="Never", containers=[
                client.V1Container(name="c", image="busybox", command=command)]))))


def pod_phase(core, name):
    return core.read_namespaced_pod(name, NS).status.phase


def scenario_watch(core, batch):
    """watch=True must give watch events, not a list."""
    core.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="py-watched"), data={"k": "v"}))
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, NS, timeout_seconds=30):
        if event["type"] == "ADDED" and event["object"].metadata.name == "py-watched":
            w.stop()
            return
    raise AssertionError("watch ended without the ADDED event of py-watched")


def scenario_log_follow(core, batch):
    """follow=True streams the log until the container exits."""
    core.create_namespaced_pod(NS, pod("py-logger", [
        "sh", "-c", "for i in 1 2 3; do echo line $i; sleep 1; done"]))
    wait_for("py-logger running", lambda: pod_phase(core, "py-logger") in ("Running", "Succeeded"))
    resp = core.read_namespaced_pod_log("py-logger", NS, follow=True, _preload_content=False)
    text = b"".join(resp.stream()).decode()
    if text.split("\n")[-4:] != ["line 1", "line 2", "line 3", ""]:
        raise AssertionError("followed log = %r" % text)


def scenario_exec(core, batch):
    """exec over the websocket channel protocol with stdout=True."""
    core.create_namespaced_pod(NS, pod("py-exec", ["sleep", "1000"]))
    wait_for("py-exec running", lambda: pod_phase(core, "py-exec") == "Running")
    out = stream(core.connect_get_namespaced_pod_exec, "py-exec", NS,
                 command=["sh", "-c", "echo hello from $0"], stderr=True, stdin=False, stdout=True, tty=False)
    if out.strip() != "hello from sh":
        raise AssertionError("exec output = %r" % out)
    core.delete_namespaced_pod("py-exec", NS, grace_period_seconds=0)


def job_pods(core, name):
    return core.list_namespaced_pod(NS, label_selector="batch.kubernetes.io/job-name=" + name).items


def scenario_orphan_delete(core, batch):
    """orphan_dependents=True deletes the Job and keeps its pods."""
    batch.create_namespaced_job(NS, job("py-orphan", ["sleep", "1000"]))
    wait_for("py-orphan's pod", lambda: job_pods(core, "py-orphan"))
    batch.delete_namespaced_job("py-orphan", NS, orphan_dependents=True)

    def job_gone():
        try:
            batch.read_namespaced_job("py-orphan", NS)
            return False
        except client.ApiException as e:
            return e.status == 404
    wait_for("py-orphan deleted", job_gone)
    pods = wait_for("orphaned pod without owner", lambda: [
        p for p in job_pods(core, "py-orphan") if not p.metadata.owner_references])
    if any(p.metadata.deletion_timestamp for p in pods):
        raise AssertionError("orphaned pod is being deleted")
    for p in pods:
        core.delete_namespaced_pod(p.metadata.name, NS, grace_period_seconds=0)


def condition(j, type_):
    for c in (j.status.conditions or []):
        if c.type == type_:
            return c.status
    return None


def scenario_suspend_resume(core, batch):
    """suspend then resume with patches; the Job completes, Suspended=False."""
    batch.create_namespaced_job(NS, job("py-suspend", ["sleep", "3"]))
    wait_for("py-suspend started", lambda: batch.read_namespaced_job("py-suspend", NS).status.start_time)
    batch.patch_namespaced_job("py-suspend", NS, {"spec": {"suspend": True}})
    wait_for("py-suspend suspended", lambda: condition(batch.read_namespaced_job("py-suspend", NS), "Suspended") == "True")
    batch.patch_namespaced_job("py-suspend", NS, {"spec": {"suspend": False}})
    j = wait_for("py-suspend complete", lambda: (
        lambda j: j if condition(j, "Complete") == "True" else None)(batch.read_namespaced_job("py-suspend", NS)))
    if condition(j, "Suspended") != "False" or j.status.succeeded != 1:
        raise AssertionError("finished job status = %s" % j.status)


def main():
    config.load_kube_config()
    core, batch = client.CoreV1Api(), client.BatchV1Api()
    for name in sys.argv[1:]:
        globals()["scenario_" + name](core, batch)
        print("ok " + name, flush=True)


if __name__ == "__main__":
    main()
