// Drives batchlet server with the official JavaScript client
// (@kubernetes/client-node). Each scenario prints "ok <name>" or exits 1.
//
// Usage: NODE_PATH=<dir>/node_modules node node_client.cjs SCENARIO
// (KUBECONFIG names the server).
'use strict';

const k8s = require('@kubernetes/client-node');
const stream = require('node:stream');

const NS = 'default';
const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(k8s.CoreV1Api);
const batch = kc.makeApiClient(k8s.BatchV1Api);

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function waitFor(what, fn, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting for ' + what);
    await sleep(200);
  }
}

function podSpec(command) {
  return { restartPolicy: 'Never', containers: [{ name: 'c', image: 'busybox', command }] };
}

function job(name, command, extra = {}) {
  return {
    metadata: { name },
    spec: { ...extra, template: { spec: podSpec(command) } },
  };
}

function condition(obj, type) {
  return ((obj.status || {}).conditions || []).find((c) => c.type === type && c.status === 'True');
}

// informer: list + watch through the client's informer, which resumes the
// watch from the list's resourceVersion.
async function scenarioInformer() {
  const informer = k8s.makeInformer(kc, `/api/v1/namespaces/${NS}/configmaps`,
    () => core.listNamespacedConfigMap({ namespace: NS }));
  const seen = new Promise((resolve, reject) => {
    informer.on('add', (cm) => { if (cm.metadata.name === 'js-watched') resolve(cm); });
    informer.on('error', reject);
  });
  await informer.start();
  await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'js-watched' }, data: { k: 'v' } } });
  const cm = await seen;
  await informer.stop();
  if (cm.data.k !== 'v') throw new Error('informer saw data ' + JSON.stringify(cm.data));
}

// job_watch: a Job created through BatchV1Api completes; its end is seen
// on a watch of the Job, not by polling.
async function scenarioJobWatch() {
  await batch.createNamespacedJob({ namespace: NS, body: job('js-job', ['sh', '-c', 'echo done $JOB_COMPLETION_INDEX'],
    { completions: 2, parallelism: 2, completionMode: 'Indexed' }) });
  const done = await new Promise((resolve, reject) => {
    let req;
    new k8s.Watch(kc).watch(`/apis/batch/v1/namespaces/${NS}/jobs`, { fieldSelector: 'metadata.name=js-job' },
      (type, obj) => {
        if (condition(obj, 'Complete') || condition(obj, 'Failed')) {
          resolve(obj);
          if (req) req.abort();
        }
      },
      (err) => { if (err && err.name !== 'AbortError') reject(err); })
      .then((r) => { req = r; }, reject);
  });
  if (!condition(done, 'Complete') || done.status.succeeded !== 2 || done.status.completedIndexes !== '0,1') {
    throw new Error('job status ' + JSON.stringify(done.status));
  }
  const pods = await core.listNamespacedPod({ namespace: NS, labelSelector: 'batch.kubernetes.io/job-name=js-job' });
  const logs = await Promise.all(pods.items.map((p) => core.readNamespacedPodLog({ name: p.metadata.name, namespace: NS })));
  if (logs.sort().join('|') !== 'done 0\n|done 1\n') throw new Error('pod logs ' + JSON.stringify(logs));
}

// log_follow: follow=true streams the log until the container exits.
async function scenarioLogFollow() {
  await core.createNamespacedPod({ namespace: NS, body: { metadata: { name: 'js-logger' },
    spec: podSpec(['sh', '-c', 'for i in 1 2 3; do echo line $i; sleep 1; done']) } });
  await waitFor('js-logger running', async () => {
    const p = await core.readNamespacedPod({ name: 'js-logger', namespace: NS });
    return ['Running', 'Succeeded'].includes(p.status.phase);
  });
  let text = '';
  const sink = new stream.Writable({ write(chunk, _enc, cb) { text += chunk.toString(); cb(); } });
  await new Promise((resolve, reject) => {
    sink.on('finish', resolve);
    new k8s.Log(kc).log(NS, 'js-logger', 'c', sink, { follow: true }).catch(reject);
  });
  if (text !== 'line 1\nline 2\nline 3\n') throw new Error('followed log = ' + JSON.stringify(text));
}

// exec: the websocket channel protocol; the status callback gets Success
// and a failing command's exit code.
async function scenarioExec() {
  await core.createNamespacedPod({ namespace: NS, body: { metadata: { name: 'js-exec' }, spec: podSpec(['sleep', '1000']) } });
  await waitFor('js-exec running', async () => {
    const p = await core.readNamespacedPod({ name: 'js-exec', namespace: NS });
    return p.status.phase === 'Running';
  });
  const run = (command) => new Promise((resolve, reject) => {
    let out = '';
    const stdout = new stream.Writable({ write(chunk, _enc, cb) { out += chunk.toString(); cb(); } });
    new k8s.Exec(kc).exec(NS, 'js-exec', 'c', command, stdout, null, null, false,
      (status) => resolve({ out, status })).catch(reject);
  });
  const ok = await run(['sh', '-c', 'echo hello from $0']);
  if (ok.out !== 'hello from sh\n' || ok.status.status !== 'Success') {
    throw new Error('exec = ' + JSON.stringify(ok));
  }
  const failed = await run(['sh', '-c', 'exit 3']);
  const code = failed.status.details && failed.status.details.causes.find((c) => c.reason === 'ExitCode' || c.type === 'ExitCode');
  if (failed.status.status !== 'Failure' || !code || code.message !== '3') {
    throw new Error('failing exec status = ' + JSON.stringify(failed.status));
  }
  await core.deleteNamespacedPod({ name: 'js-exec', namespace: NS, gracePeriodSeconds: 0 });
}

// suspend_resume: a merge patch suspends a Job, the controller says so in
// a condition, and a second patch resumes it to completion.
async function scenarioSuspendResume() {
  await batch.createNamespacedJob({ namespace: NS, body: job('js-suspend', ['true'], { suspend: true }) });
  const read = () => batch.readNamespacedJob({ name: 'js-suspend', namespace: NS });
  await waitFor('js-suspend Suspended', async () => condition(await read(), 'Suspended'));
  await batch.patchNamespacedJob({ name: 'js-suspend', namespace: NS, body: { spec: { suspend: false } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
  const done = await waitFor('js-suspend Complete', async () => {
    const j = await read();
    return condition(j, 'Complete') && j;
  });
  const suspended = (done.status.conditions || []).find((c) => c.type === 'Suspended');
  if (!suspended || suspended.status !== 'False' || suspended.reason !== 'JobResumed' || done.status.succeeded !== 1) {
    throw new Error('resumed job status ' + JSON.stringify(done.status));
  }
}

// orphan_delete: propagationPolicy Orphan keeps the Job's pods.
async function scenarioOrphanDelete() {
  await batch.createNamespacedJob({ namespace: NS, body: job('js-orphan', ['sleep', '1000']) });
  const pods = () => core.listNamespacedPod({ namespace: NS, labelSelector: 'batch.kubernetes.io/job-name=js-orphan' });
  await waitFor('js-orphan pod', async () => (await pods()).items.length === 1);
  await batch.deleteNamespacedJob({ name: 'js-orphan', namespace: NS, propagationPolicy: 'Orphan' });
  await waitFor('js-orphan gone', async () => {
    try {
      await batch.readNamespacedJob({ name: 'js-orphan', namespace: NS });
      return false;
    } catch (e) {
      if (e.code === 404) return true;
      throw e;
    }
  });
  const left = await waitFor('orphaned pod without owner', async () => {
    const items = (await pods()).items;
    return items.length === 1 && !(items[0].metadata.ownerReferences || []).length && items;
  });
  await core.deleteNamespacedPod({ name: left[0].metadata.name, namespace: NS, gracePeriodSeconds: 0 });
}

const scenarios = {
  informer: scenarioInformer,
  job_watch: scenarioJobWatch,
  log_follow: scenarioLogFollow,
  exec: scenarioExec,
  suspend_resume: scenarioSuspendResume,
  orphan_delete: scenarioOrphanDelete,
};

(async () => {
  for (const name of process.argv.slice(2)) {
    const fn = scenarios[name];
    if (!fn) throw new Error('unknown scenario ' + name);
    await fn();
    console.log('ok ' + name);
  }
})().catch((err) => {
  console.error(err && err.body ? JSON.stringify(err.body) : err);
  process.exit(1);
});
