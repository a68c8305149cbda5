package api

import (
	"encoding"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The OpenAPI document is generated from the route table and the Go types
// it names, by a small reflector written for the shapes this API has:
// structs with json tags, slices, string maps, pointers, text marshalers
// (enums) and json.RawMessage. A library would bring a dependency and its own
// idea of encoding/json's rules for a few dozen lines.

var (
	docOnce sync.Once
	docJSON []byte
)

// OpenAPI returns the OpenAPI 3.1 document of the API.
func OpenAPI() map[string]any {
	g := &schemaGen{defs: map[string]any{}, names: map[string]reflect.Type{}}
	g.defs["Error"] = g.structSchema(reflect.TypeFor[Error]())
	paths := map[string]any{}
	for _, rt := range routes {
		item, _ := paths[rt.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = g.operation(rt)
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "gateway control API", "version": "1",
			"description": "Bearer tokens carry scopes (read, send, approve, files; files lets a send attach files from the files directory); each operation's x-scope names the one it needs. /healthz and /readyz need no token. The Unix control socket needs none."},
		"paths": paths,
		"components": map[string]any{
			"schemas":         g.defs,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
}

var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

func (g *schemaGen) operation(rt route) map[string]any {
	op := map[string]any{
		"summary":     rt.summary,
		"operationId": operationID(rt),
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, q := range rt.query {
		params = append(params, map[string]any{"name": q.name, "in": "query", "description": q.doc, "schema": map[string]any{"type": q.typ}})
	}
	if params != nil {
		op["parameters"] = params
	}
	if rt.scope == 0 {
		op["security"] = []any{}
	} else {
		op["x-scope"] = rt.scope.String()
	}
	if rt.in != nil {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.in))}}}
	}
	ok := map[string]any{"description": http.StatusText(rt.successStatus())}
	switch {
	case rt.produces != "" && rt.out != nil:
		ok["content"] = map[string]any{rt.produces: map[string]any{"itemSchema": g.schema(reflect.TypeOf(rt.out))}}
	case rt.produces != "":
		ok["content"] = map[string]any{rt.produces: map[string]any{"schema": map[string]any{"type": "string"}}}
	case rt.out != nil:
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.out))}}
	}
	op["responses"] = map[string]any{
		strconv.Itoa(rt.successStatus()): ok,
		"default": map[string]any{"description": "An error; the status follows from code.", "content": map[string]any{
			"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}},
	}
	return op
}

func (rt route) successStatus() int {
	if rt.status == 0 {
		return http.StatusOK
	}
	return rt.status
}

func operationID(rt route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.method))
	for _, part := range strings.FieldsFunc(rt.path, func(r rune) bool { return r == '/' || r == '.' || r == '{' || r == '}' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// schemaGen reflects Go types into JSON Schema (2020-12, as OpenAPI 3.1
// uses it). Named structs become components, referenced by $ref, which
// also ends recursion.
type schemaGen struct {
	defs  map[string]any
	names map[string]reflect.Type
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	textType = reflect.TypeFor[encoding.TextMarshaler]()
)

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{} // any JSON value
	case t.Kind() != reflect.Pointer && (t.Implements(textType) || reflect.PointerTo(t).Implements(textType)):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem())
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return g.structSchema(t)
		}
		name := g.nameOf(t)
		if _, done := g.defs[name]; !done {
			g.defs[name] = map[string]any{} // placeholder: a recursive reference ends here
			g.defs[name] = g.structSchema(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{} // interfaces and the rest: any JSON value
}

// nameOf is the component name: the type's name, qualified by its package
// when two packages use the same one.
func (g *schemaGen) nameOf(t reflect.Type) string {
	name := t.Name()
	if prev, ok := g.names[name]; ok && prev != t {
		pkg := t.PkgPath()
		name = pkg[strings.LastIndex(pkg, "/")+1:] + "." + name
	}
	g.names[name] = t
	return name
}

func (g *schemaGen) structSchema(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, props, &required)
	s := map[string]any{"type": "object", "properties": props}
	if required != nil {
		s["required"] = required
	}
	return s
}

// fields follows encoding/json: exported fields, json tag names, "-"
// skipped, untagged embedded structs flattened, omitempty/omitzero optional.
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
		optional := false
		for o := range strings.SplitSeq(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		if !optional {
			*required = append(*required, name)
		}
	}
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	docOnce.Do(func() {
		b, err := json.MarshalIndent(OpenAPI(), "", "  ")
		if err != nil {
			panic(err) // the document is built from our own types: a bug
		}
		docJSON = append(b, '\n')
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(docJSON)
}
