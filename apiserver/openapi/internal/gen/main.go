// Command gen writes batchlet's OpenAPI v2 and v3 documents as JSON files
// that package openapi embeds. Usage: gen <output dir>.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/batchlet/batchlet/apiserver/openapi/internal/build"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen <output dir>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(dir string) error {
	v2, err := build.V2()
	if err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "v2.json"), v2); err != nil {
		return err
	}
	v3, err := build.V3()
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(dir, "v3")); err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	for key, doc := range v3 {
		if err := writeJSON(filepath.Join(dir, "v3", key+".json"), doc); err != nil {
			return err
		}
	}
	return nil
}

func writeJSON(path string, doc interface{}) error {
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("marshal %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create dir for %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
