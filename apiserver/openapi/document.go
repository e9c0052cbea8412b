package openapi

import (
	"crypto/sha512"
	"fmt"
	"io/fs"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
)

// document is one embedded JSON document with its lazily computed ETag and
// protobuf encoding.
type document struct {
	json func() ([]byte, error)
	etag func() (string, error)
	pb   func() ([]byte, error)
}

// toProto converts a JSON document to its gnostic protobuf encoding.
type toProto func(json []byte) ([]byte, error)

func newDocument(fsys fs.FS, name string, convert toProto) *document {
	d := &document{}
	d.json = sync.OnceValues(func() ([]byte, error) {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read openapi document %s: %w", name, err)
		}
		return data, nil
	})
	d.etag = sync.OnceValues(func() (string, error) {
		data, err := d.json()
		if err != nil {
			return "", err
		}
		return computeETag(data), nil
	})
	d.pb = sync.OnceValues(func() ([]byte, error) {
		data, err := d.json()
		if err != nil {
			return nil, err
		}
		pb, err := convert(data)
		if err != nil {
			return nil, fmt.Errorf("convert openapi document %s to protobuf: %w", name, err)
		}
		return pb, nil
	})
	return d
}

// computeETag hashes a document the way kube-apiserver does (upper-case hex SHA-512).
func computeETag(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

func v2Proto(data []byte) ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(data)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(doc)
}

func v3Proto(data []byte) ([]byte, error) {
	doc, err := openapi_v3.ParseDocument(data)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(doc)
}
