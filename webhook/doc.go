// Package webhook serves JobSet admission — defaulting and validation over
// admission.k8s.io/v1 AdmissionReview — from `batchlet controllers`. On a
// real cluster the JobSet CRD's schema and CEL rules cover only part of what
// upstream JobSet checks: its manager's webhooks name failure-policy rules,
// default child Jobs and refuse what the schema cannot express. These
// handlers apply batchlet's own JobSet defaults and validation (the ones
// `batchlet server` applies in its API), so a JobSet gets the same spec and
// the same messages on both.
package webhook
