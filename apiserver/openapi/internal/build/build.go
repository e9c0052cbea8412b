package build

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Title and Version fill the documents' info block.
const (
	Title   = "Kubernetes"
	Version = "v1.36.0"
)

func info() *spec.Info {
	return &spec.Info{InfoProps: spec.InfoProps{Title: Title, Version: Version}}
}

// routeContainers returns the served group versions as kube-openapi route containers.
func routeContainers() ([]common.RouteContainer, error) {
	cs, err := containers()
	if err != nil {
		return nil, err
	}
	out := make([]common.RouteContainer, 0, len(cs))
	for _, c := range cs {
		out = append(out, c)
	}
	return out, nil
}

// extraModels are definitions no route mentions that clients still look
// up: watch streams carry WatchEvent objects.
func extraModels() []string {
	return []string{util.GetCanonicalTypeName(modelWatchEvent)}
}

// V2 builds the OpenAPI v2 (Swagger) document of every served resource.
func V2() (*spec.Swagger, error) {
	namer := newDefinitionNamer()
	cfg := &common.Config{
		Info:                           info(),
		GetDefinitions:                 definitions,
		GetDefinitionName:              namer.name,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		CommonResponses:                map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}},
	}
	routes, err := routeContainers()
	if err != nil {
		return nil, fmt.Errorf("build openapi v2: %w", err)
	}
	sw, err := builder.BuildOpenAPISpecFromRoutes(routes, cfg)
	if err != nil {
		return nil, fmt.Errorf("build openapi v2: %w", err)
	}
	extra, err := builder.BuildOpenAPIDefinitionsForResources(cfg, extraModels()...)
	if err != nil {
		return nil, fmt.Errorf("build openapi v2 extra definitions: %w", err)
	}
	for name, def := range extra.Definitions {
		sw.Definitions[name] = def
	}
	return sw, nil
}

// V3 builds one OpenAPI v3 document per served group version, keyed by the
// path the v3 discovery lists it under ("api/v1", "apis/batch/v1").
func V3() (map[string]*spec3.OpenAPI, error) {
	cs, err := containers()
	if err != nil {
		return nil, fmt.Errorf("build openapi v3: %w", err)
	}
	out := map[string]*spec3.OpenAPI{}
	for _, c := range cs {
		namer := newDefinitionNamer()
		cfg := &common.OpenAPIV3Config{
			Info:                           info(),
			GetDefinitions:                 definitions,
			GetDefinitionName:              namer.name,
			GetOperationIDAndTagsFromRoute: operationIDAndTags,
			CommonResponses: map[int]*spec3.Response{http.StatusUnauthorized: {
				ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}},
		}
		doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{c}, cfg)
		if err != nil {
			return nil, fmt.Errorf("build openapi v3 %s: %w", c.root, err)
		}
		extra, err := builder3.BuildOpenAPIDefinitionsForResources(cfg, extraModels()...)
		if err != nil {
			return nil, fmt.Errorf("build openapi v3 %s extra definitions: %w", c.root, err)
		}
		for name, schema := range extra {
			doc.Components.Schemas[name] = schema
		}
		out[strings.TrimPrefix(c.root, "/")] = doc
	}
	return out, nil
}
