package apiserver

import (
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/batchlet/batchlet/apiserver/endpoints"
)

// BackupPath streams a consistent snapshot of the store (`batchlet
// backup`). It is a non-resource URL: RBAC grants it to system:masters
// only, unless a ClusterRole names it.
const BackupPath = "/debug/batchlet/backup"

// BackupRevisionHeader carries the store revision the snapshot holds.
const BackupRevisionHeader = "X-Batchlet-Revision"

// snapshotter is a store that can copy itself while it serves.
type snapshotter interface {
	Snapshot(w io.Writer) (rev int64, err error)
}

// serveBackup writes the snapshot as the body. The revision is known only
// once the copy is made, so it is sent as a trailer; a copy that fails
// midway aborts the response, so a client never takes a truncated body for
// a backup.
func (s *Server) serveBackup(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		endpoints.WriteError(w, endpoints.ErrMethodNotSupported("backup", r.Method))
		return
	}
	snap, ok := s.store.(snapshotter)
	if !ok {
		endpoints.WriteError(w, fmt.Errorf("the store of this server (in memory) cannot be backed up"))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Trailer", BackupRevisionHeader)
	rev, err := snap.Snapshot(w)
	if err != nil {
		s.log.Error("backup failed", "err", err)
		panic(http.ErrAbortHandler)
	}
	w.Header().Set(BackupRevisionHeader, strconv.FormatInt(rev, 10))
	s.log.Info("backup served", "revision", rev)
}
