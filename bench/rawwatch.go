package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/rest"
)

// watchEvent is one line of a JSON watch stream, its object left raw so
// each consumer decodes only the fields it needs: a full typed decode of
// every pod event would make the harness one of the larger costs of the
// process it measures.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

type objectMeta struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// rawWatch follows one watch from rv, reconnecting from the last seen
// resource version when the stream ends, until ctx ends. fn receives the
// arrival time and every ADDED/MODIFIED/DELETED event's raw object.
func rawWatch(ctx context.Context, newReq func() *rest.Request, rv string, fn func(now time.Time, obj []byte)) error {
	for ctx.Err() == nil {
		body, err := newReq().Param("watch", "true").Param("allowWatchBookmarks", "true").
			Param("resourceVersion", rv).Stream(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("open watch at %s: %w", rv, err)
		}
		rv, err = readEvents(body, rv, fn)
		body.Close()
		if err != nil && ctx.Err() == nil {
			return err
		}
	}
	return nil
}

// readEvents consumes one watch stream and returns the last resource
// version seen.
func readEvents(body io.Reader, rv string, fn func(time.Time, []byte)) (string, error) {
	dec := json.NewDecoder(body)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) {
				return rv, nil
			}
			return rv, nil // a cut stream: reconnect from rv
		}
		now := time.Now()
		if ev.Type == "ERROR" {
			return rv, fmt.Errorf("watch error: %s", ev.Object)
		}
		if v := resourceVersionOf(ev.Object); v != "" {
			rv = v
		}
		if ev.Type != "BOOKMARK" {
			fn(now, ev.Object)
		}
	}
}

// rvField is how metadata.resourceVersion starts in the server's JSON.
var rvField = []byte(`"resourceVersion":"`)

// resourceVersionOf reads metadata.resourceVersion. Objects put metadata
// before spec and status and nothing inside metadata before it carries a
// resourceVersion, so the first occurrence is the object's own: finding it
// saves the harness a full decode of every event.
func resourceVersionOf(obj []byte) string {
	if i := bytes.Index(obj, rvField); i >= 0 {
		rest := obj[i+len(rvField):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			return string(rest[:j])
		}
	}
	var m objectMeta
	if err := json.Unmarshal(obj, &m); err != nil {
		return ""
	}
	return m.Metadata.ResourceVersion
}
