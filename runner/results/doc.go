// Package results reads the folder a run's steps write their findings and
// requests to ($HOOKRUN_RESULTS, contract.ExecRequest.Results) and decodes
// the formats tools already write:
//
//   - *.sarif: SARIF 2.1.0 as golangci-lint, semgrep, eslint and CodeQL
//     write it: runs[].results[] with ruleId, level (default the rule's
//     defaultConfiguration.level, else warning), message.text, the first
//     location's artifactLocation (uri, uriBaseId resolved through
//     originalUriBaseIds, file:// URIs) and region, and fixes[] as
//     suggestions;
//   - *.rdjson (one reviewdog DiagnosticResult) and *.rdjsonl (one
//     reviewdog Diagnostic per line): message, location.path and range,
//     severity (ERROR, WARNING, INFO), source.name, code.value,
//     suggestions[];
//   - actions.json at the folder's top: what a step asks hookrun to do on
//     the forge (contract.Actions), decoded strictly.
//
// Other files are ignored. A malformed file is an error placed as
// file:line:col (for *.rdjsonl the line of the bad record). Paths are made
// relative to the repository root: a relative path is taken as it is, an
// absolute one (or a file:// URI) is relative when it lies in one of the
// roots the workspace is known by (its host path, /workspace in containers,
// its path in a sandbox); a finding outside the checkout (`../x`, an
// absolute path elsewhere) is dropped and counted.
//
// The folder belongs to the run's untrusted steps: Reader walks it through
// directory descriptors opened with O_NOFOLLOW, so a symlink is never
// followed, not even one inside the folder (it is noted and skipped), and
// it reads at most contract.MaxResultsBytes of result files and keeps at
// most contract.MaxResultsFindings findings per run; what is cut is said
// in Results.Notes and counted in Results.Dropped.
//
// A folder a Scan found empty is not listed again while its directory
// shows that nothing was made in it since (reader.go, markQuiet): steps that leave no
// results cost a stat each, not a listing.
//
// The decoders are written here rather than taken from a SARIF library:
// hookrun reads some fifteen fields, wants a malformed file's position,
// and this package imports only workflows and runner/contract.
package results
