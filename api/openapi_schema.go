package api

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// schemaGen reflects Go types into JSON Schema (2020-12, as OpenAPI 3.1
// uses it), following encoding/json: structs with json tags, slices,
// string maps, pointers, text marshalers and json.RawMessage. Named
// structs become components, referenced by $ref, which also ends
// recursion. A library would bring its own idea of encoding/json's rules
// for what is a few dozen lines here.
type schemaGen struct {
	defs  map[string]any
	names map[string]reflect.Type
}

func newSchemaGen() *schemaGen {
	return &schemaGen{defs: map[string]any{}, names: map[string]reflect.Type{}}
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	textType = reflect.TypeFor[encoding.TextMarshaler]()
)

// schemaNames are the components named otherwise than their Go type: the
// document kept the name it gave a type before the type was renamed, so a
// client generated from it keeps its own.
var schemaNames = map[reflect.Type]string{
	reflect.TypeFor[message.OutboxItem](): "Item",
}

// schemaName is t's component name, unqualified; also the key of its
// entries in typeDocs and fieldDocs.
func schemaName(t reflect.Type) string {
	if n, ok := schemaNames[t]; ok {
		return n
	}
	return t.Name()
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{} // any JSON value
	case t.Kind() != reflect.Pointer && (t.Implements(textType) || reflect.PointerTo(t).Implements(textType)):
		s := map[string]any{"type": "string"}
		if e := enumOf(t); e != nil {
			s["enum"] = e
		}
		return s
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
		s := map[string]any{"type": "string"}
		if e := enumOf(t); e != nil {
			s["enum"] = e
		}
		return s
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
	name := schemaName(t)
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
	if d := typeDocs[schemaName(t)]; d != "" {
		s["description"] = d
	}
	if required != nil {
		s["required"] = required
	}
	if alt, ok := eitherOf[schemaName(t)]; ok {
		s["anyOf"] = []any{map[string]any{"required": []string{alt[0]}}, map[string]any{"required": []string{alt[1]}}}
	}
	return s
}

// fields follows encoding/json: exported fields, json tag names, "-"
// skipped, untagged embedded structs flattened, omitempty/omitzero
// optional. Each property is described by its declaring struct's entry in
// fieldDocs, so an embedded struct's fields read the same everywhere.
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
		props[name] = g.property(schemaName(t)+"."+name, f.Type)
		optional := false
		for o := range strings.SplitSeq(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		if !optional {
			*required = append(*required, name)
		}
	}
}

// property is a field's schema with its words: description, the values
// of a plain string that holds a closed set, a pattern, deprecation.
func (g *schemaGen) property(key string, t reflect.Type) map[string]any {
	s := g.schema(t)
	if _, isRef := s["$ref"]; isRef {
		s = map[string]any{"$ref": s["$ref"]} // a copy: siblings of $ref are this use's own
	}
	if d := fieldDocs[key]; d != "" {
		s["description"] = d
	}
	target := s
	if items, ok := s["items"].(map[string]any); ok {
		target = items // a list's closed set is its items'
	}
	if e := fieldEnums[key]; e != nil {
		target["enum"] = e
	}
	if p := fieldPatterns[key]; p != "" {
		target["pattern"] = p
	}
	if deprecatedFields[key] {
		s["deprecated"] = true
	}
	return s
}
