package api

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/sessiongateway/gateway/message"
)

var update = flag.Bool("update", false, "rewrite api/openapi.json from the served document")

const committedDoc = "openapi.json"

func TestTheCommittedOpenAPIDocumentIsTheServedOne(t *testing.T) {
	rec := httptest.NewRecorder()
	newTestServer().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /openapi.json: %d %s", rec.Code, rec.Body.String())
	}
	served := rec.Body.Bytes()
	if *update {
		if err := os.WriteFile(committedDoc, served, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(committedDoc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(served, committed) {
		t.Fatalf("api/openapi.json is not the served document (%s): run go generate ./api (go test ./api -run TestTheCommittedOpenAPIDocumentIsTheServedOne -update) and commit it",
			firstDifference(committed, served))
	}
}

// firstDifference names the first line where a and b differ.
func firstDifference(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ": committed " + strings.TrimSpace(x) + ", served " + strings.TrimSpace(y)
		}
	}
	return "same lines"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// newDocValidator parses the committed document with libopenapi, an
// independent OpenAPI 3.1 implementation.
func newDocValidator(t *testing.T, opts ...config.Option) (libopenapi.Document, validator.Validator) {
	t.Helper()
	doc, err := libopenapi.NewDocument(openAPIJSON())
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, opts...)
	if len(errs) > 0 {
		t.Fatalf("the validator refuses the document: %v", errs)
	}
	return doc, v
}

func TestTheOpenAPIDocumentIsValidOpenAPI31(t *testing.T) {
	doc, v := newDocValidator(t)
	if got := doc.GetVersion(); got != "3.1.0" {
		t.Errorf("version %q, want 3.1.0", got)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("libopenapi cannot build the model: %v", err)
	}
	if len(model.Model.Servers) == 0 {
		t.Error("the document names no servers")
	}
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("%s: %s (%v)", e.Message, e.Reason, e.SchemaValidationErrors)
		}
	}
	if bytes.Contains(openAPIJSON(), []byte(`"itemSchema"`)) {
		t.Error("the document uses itemSchema, an OpenAPI 3.2 keyword")
	}
}

func TestEveryOperationPropertyAndParameterIsDescribed(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	for p, item := range doc["paths"].(map[string]any) {
		for m, op := range item.(map[string]any) {
			op := op.(map[string]any)
			if op["description"] == "" || op["summary"] == "" {
				t.Errorf("%s %s has no summary or description", m, p)
			}
			params, _ := op["parameters"].([]any)
			for _, pa := range params {
				if pa := pa.(map[string]any); pa["description"] == "" || pa["description"] == nil {
					t.Errorf("%s %s: parameter %v has no description (pathParamDocs, headerParams or the route's query)", m, p, pa["name"])
				}
			}
		}
	}
	for name, s := range doc["components"].(map[string]any)["schemas"].(map[string]any) {
		s := s.(map[string]any)
		if s["description"] == nil {
			t.Errorf("schema %s has no description (typeDocs)", name)
		}
		for prop, ps := range s["properties"].(map[string]any) {
			if ps.(map[string]any)["description"] == nil {
				t.Errorf("%s.%s has no description: add it to fieldDocs in api/openapi_docs.go", name, prop)
			}
		}
	}
	// Words for a property that is gone would mislead whoever reads the
	// table: every entry must be used.
	used := map[string]bool{}
	for _, rt := range routes {
		for _, v := range []any{rt.in, rt.out} {
			if v != nil {
				collectKeys(reflect.TypeOf(v), used, map[reflect.Type]bool{})
			}
		}
	}
	collectKeys(reflect.TypeFor[Error](), used, map[reflect.Type]bool{})
	for _, m := range []map[string]string{fieldDocs} {
		for k := range m {
			if !used[k] {
				t.Errorf("fieldDocs describes %s, which no schema has", k)
			}
		}
	}
	for _, m := range []map[string][]string{fieldEnums} {
		for k := range m {
			if !used[k] {
				t.Errorf("fieldEnums lists %s, which no schema has", k)
			}
		}
	}
	for k := range pathParamDocs {
		path, _, _ := strings.Cut(k, " ")
		if !slices.ContainsFunc(routes, func(rt route) bool { return rt.path == path }) {
			t.Errorf("pathParamDocs describes %s, which no route has", k)
		}
	}
}

// collectKeys gathers the fieldDocs keys (declaring struct and JSON name)
// the schemas of t use.
func collectKeys(t reflect.Type, keys map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType || seen[t] {
		return
	}
	seen[t] = true
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			collectKeys(f.Type, keys, seen)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		keys[schemaName(t)+"."+name] = true
		collectKeys(f.Type, keys, seen)
	}
}

// constsOf lists the constants of type typeName declared in the package
// at dir (its non-test files), as written in the source.
func constsOf(t *testing.T, dir, typeName string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok || id.Name != typeName {
					continue
				}
				for i, n := range vs.Names {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out = append(out, strings.Trim(lit.Value, "`\""))
					} else {
						out = append(out, n.Name) // not a literal: shows up as a mismatch
					}
				}
			}
		}
	}
	return out
}

func packageDir(t *testing.T, pkgPath string) string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(here))
	return filepath.Join(root, strings.TrimPrefix(pkgPath, "github.com/sessiongateway/gateway/"))
}

func TestEveryEnumListsEveryConstantOfItsType(t *testing.T) {
	for typ, listed := range stringEnums {
		t.Run(typ.String(), func(t *testing.T) {
			declared := constsOf(t, packageDir(t, typ.PkgPath()), typ.Name())
			if !sameSet(declared, listed) {
				t.Errorf("%s declares %v, the document lists %v: update stringEnums in api/openapi_enums.go", typ, declared, listed)
			}
		})
	}
	t.Run("error codes", func(t *testing.T) {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, "errors.go", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		var declared []string
		ast.Inspect(file, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok && strings.HasPrefix(vs.Names[0].Name, "Code") && len(vs.Values) == 1 {
				if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
					declared = append(declared, strings.Trim(lit.Value, `"`))
				}
			}
			return true
		})
		if !sameSet(declared, errorCodes) {
			t.Errorf("errors.go declares %v, errorCodes lists %v", declared, errorCodes)
		}
	})
	t.Run("integer enums are read off their wire tables", func(t *testing.T) {
		for _, tt := range []struct {
			typ  reflect.Type
			want []string
		}{
			{reflect.TypeFor[message.Status](), []string{"queued", "sent", "held", "delivered", "denied", "expired", "refused", "dropped", "misaddressed", "failed"}},
			{reflect.TypeFor[message.LinkState](), []string{"connected", "reconnecting", "dormant", "gave_up"}},
			{reflect.TypeFor[message.Mode](), []string{"bypass", "prompting"}},
		} {
			if got := enumOf(tt.typ); !slices.Equal(got, tt.want) {
				t.Errorf("%s: %v, want %v", tt.typ, got, tt.want)
			}
		}
		var reasons []string
		for r := message.DropReason(1); r.String() != "" && !strings.HasPrefix(r.String(), "drop("); r++ {
			reasons = append(reasons, r.String())
		}
		if got := enumOf(reflect.TypeFor[message.DropReason]()); !slices.Equal(got, reasons) {
			t.Errorf("drop reasons %v, want %v", got, reasons)
		}
	})
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

func TestTheDocumentListsClosedSetsAsEnums(t *testing.T) {
	var doc map[string]any
	_ = json.Unmarshal(openAPIJSON(), &doc)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	enum := func(schema, prop string) []any {
		p, _ := schemas[schema].(map[string]any)["properties"].(map[string]any)[prop].(map[string]any)
		if items, ok := p["items"].(map[string]any); ok {
			p = items
		}
		e, _ := p["enum"].([]any)
		return e
	}
	for _, tt := range []struct{ schema, prop string }{
		{"Session", "protocol"}, {"Outbound", "status"}, {"Receipt", "status"}, {"Receipt", "drop_reason"},
		{"Drop", "reason"}, {"Event", "type"}, {"Event", "leg"}, {"Link", "state"}, {"Message", "mode"},
		{"Message", "auth"}, {"PermissionRequest", "kind"}, {"PermissionRequest", "state"}, {"PermissionRequest", "verbs"},
		{"PermissionAnswer", "behavior"}, {"PermissionAnswer", "mode"}, {"ControlBody", "kind"}, {"Error", "code"},
		{"Error", "missing_scope"}, {"Item", "state"}, {"Item", "failure"}, {"DecideBody", "action"}, {"SendBody", "mode"},
		{"Attachment", "refused"},
	} {
		if len(enum(tt.schema, tt.prop)) == 0 {
			t.Errorf("%s.%s lists no values", tt.schema, tt.prop)
		}
	}
}

// TestRealAnswersMatchTheDocument sends requests to a served API and
// validates both each request and each answer against the document with
// libopenapi's validator: a field the code renames or fills with a value
// outside its enum fails here, and (undeclared, below) one it adds.
func TestRealAnswersMatchTheDocument(t *testing.T) {
	_, v := newDocValidator(t)
	var doc map[string]any
	_ = json.Unmarshal(openAPIJSON(), &doc)
	srv := httptest.NewServer(newTestServer().Handler())
	t.Cleanup(srv.Close)
	var sent struct {
		Message struct{ ID string } `json:"message"`
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		keep                     any
	}{
		{"sessions are listed as documented", "GET", "/v1/sessions", "", 200, nil},
		{"a send in body answers an Outbound as documented", "POST", "/v1/messages", `{"to":"review","body":"hi","mode":"bypass"}`, 201, &sent},
		{"a message looked up is as documented", "GET", "/v1/messages/{sent}", "", 200, nil},
		{"a refused send is an Error as documented", "POST", "/v1/messages", `{"to":"reviw","body":"x"}`, 404, nil},
		{"held messages are listed as documented", "GET", "/v1/held", "", 200, nil},
		{"prompts are listed as documented", "GET", "/v1/permissions?all=true", "", 200, nil},
		{"the outbox answers as documented", "GET", "/v1/outbox", "", 200, nil},
		{"federation off answers as documented", "GET", "/v1/federation", "", 200, nil},
		{"the status answers as documented", "GET", "/v1/status", "", 200, nil},
		{"the liveness probe answers as documented", "GET", "/healthz", "", 200, nil},
		{"the readiness probe answers as documented", "GET", "/readyz", "", 200, nil},
		{"a resolved address is as documented", "GET", "/v1/resolve?address=review", "", 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := strings.ReplaceAll(tt.path, "{sent}", sent.Message.ID)
			req, _ := http.NewRequestWithContext(context.Background(), tt.method, srv.URL+path, strings.NewReader(tt.body))
			req.Header.Set("Authorization", "Bearer tok")
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			if ok, errs := v.ValidateHttpRequest(req); !ok {
				t.Errorf("the request does not match the document: %v", describe(errs))
			}
			req, _ = http.NewRequestWithContext(context.Background(), tt.method, srv.URL+path, strings.NewReader(tt.body))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			if tt.keep != nil {
				_ = json.Unmarshal(body.Bytes(), tt.keep)
			}
			resp.Body = readCloser{bytes.NewReader(body.Bytes())}
			if ok, errs := v.ValidateHttpResponse(req, resp); !ok {
				t.Errorf("the answer does not match the document: %v\n%s", describe(errs), body)
			}
			var answer any
			_ = json.Unmarshal(body.Bytes(), &answer)
			op := doc["paths"].(map[string]any)[strings.ReplaceAll(strings.Split(tt.path, "?")[0], "{sent}", "{id}")].(map[string]any)[strings.ToLower(tt.method)].(map[string]any)
			r, _ := op["responses"].(map[string]any)[itoa(tt.status)].(map[string]any)
			if r == nil {
				r = op["responses"].(map[string]any)["4XX"].(map[string]any)
			}
			schema := r["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
			for _, k := range undeclared(doc, schema, answer, "$") {
				t.Errorf("the answer has %s, which the document does not declare", k)
			}
		})
	}
}

// undeclared lists the object keys in v that schema (followed through
// $ref, items and additionalProperties) does not declare. The validator's
// strict mode would do it, but it does not follow a $ref with siblings.
func undeclared(doc, schema map[string]any, v any, at string) []string {
	if ref, ok := schema["$ref"].(string); ok {
		schema = doc["components"].(map[string]any)["schemas"].(map[string]any)[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
	var out []string
	switch v := v.(type) {
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range v {
				out = append(out, undeclared(doc, items, x, at+"["+itoa(i)+"]")...)
			}
		}
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		extra, _ := schema["additionalProperties"].(map[string]any)
		for k, x := range v {
			switch p, ok := props[k].(map[string]any); {
			case ok:
				out = append(out, undeclared(doc, p, x, at+"."+k)...)
			case extra != nil:
				out = append(out, undeclared(doc, extra, x, at+"."+k)...)
			default:
				out = append(out, at+"."+k)
			}
		}
	}
	return out
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.Message + ": " + e.Reason)
		for _, s := range e.SchemaValidationErrors {
			b.WriteString(" [" + s.FieldPath + " " + s.KeywordLocation + " " + s.Reason + "]")
		}
		b.WriteString("; ")
	}
	return b.String()
}

func TestABodyTakesTheDeprecatedTextSpellingForOneRelease(t *testing.T) {
	h := newTestServer().Handler()
	tests := []struct {
		name, body string
		status     int
	}{
		{"body is the text", `{"to":"review","body":"hi"}`, 201},
		{"text, its deprecated spelling, still works", `{"to":"review","text":"hi"}`, 201},
		{"both with the same text work", `{"to":"review","body":"hi","text":"hi"}`, 201},
		{"both with different texts are refused", `{"to":"review","body":"hi","text":"ho"}`, 400},
		{"neither is refused", `{"to":"review"}`, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(tt.body)))
			if rec.Code != tt.status {
				t.Fatalf("%d, want %d: %s", rec.Code, tt.status, rec.Body.String())
			}
			var out struct {
				Message message.Message `json:"message"`
			}
			if tt.status == 201 && (json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.Message.Body != "hi") {
				t.Errorf("the message sent is %q, want hi", out.Message.Body)
			}
		})
	}
	t.Run("a remote session's body and text must agree", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/remote/sessions", strings.NewReader(`{"body":"hi","text":"ho"}`)))
		if rec.Code != 400 {
			t.Fatalf("%d, want 400: %s", rec.Code, rec.Body.String())
		}
	})
	t.Run("the document marks text deprecated on both requests", func(t *testing.T) {
		var doc map[string]any
		_ = json.Unmarshal(openAPIJSON(), &doc)
		schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
		for _, s := range []string{"SendBody", "NewRemoteSession"} {
			props := schemas[s].(map[string]any)["properties"].(map[string]any)
			if props["text"].(map[string]any)["deprecated"] != true || props["body"] == nil {
				t.Errorf("%s: %v", s, slices.Sorted(maps.Keys(props)))
			}
		}
	})
}

// TestTheActionLinksPlainTextRefusalsMatchTheDocument: a notification's
// link answers 403, 409 and 410 in plain text for a person (as
// notify.ActionHandler does); the document says so.
func TestTheActionLinksPlainTextRefusalsMatchTheDocument(t *testing.T) {
	_, v := newDocValidator(t)
	for _, code := range []int{http.StatusForbidden, http.StatusConflict, http.StatusGone} {
		srv := NewServer(Config{Router: newTestServer().cfg.Router, Actions: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(code)
			_, _ = w.Write([]byte("a used or expired link\n"))
		})})
		req := httptest.NewRequest("GET", "http://127.0.0.1:8080/v1/actions/abc", nil)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		resp := rec.Result()
		if ok, errs := v.ValidateHttpResponse(req, resp); !ok || resp.StatusCode != code {
			t.Errorf("%d: the answer does not match the document: %v", resp.StatusCode, describe(errs))
		}
	}
}
