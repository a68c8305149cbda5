package api

import (
	"encoding"
	"reflect"
	"slices"
	"strings"

	"github.com/sessiongateway/gateway/message"
)

// The closed sets the document lists, taken from the constants that
// define them so they cannot drift: an integer enum with a wire spelling
// (message.Status, DropReason, LinkState, Mode, the outbox's states and
// failures) is read off its own MarshalText; a string type's values are
// listed here from its constants, and a test compares the list with the
// constants its package declares.

type eventTypeT = message.EventType

var stringEnums = map[reflect.Type][]string{
	reflect.TypeFor[message.Protocol](): strs(message.ProtocolClaude, message.ProtocolQwen, message.ProtocolRemote,
		message.ProtocolFederation, message.ProtocolMCP, message.ProtocolHosted, message.ProtocolClaudeBG),
	reflect.TypeFor[message.EventType](): strs(message.EventMessage, message.EventReceipt, message.EventIdle, message.EventHeld,
		message.EventDrop, message.EventSession, message.EventRemote, message.EventPermission, message.EventLink),
	reflect.TypeFor[message.AttachmentRefusal](): strs(message.AttachmentUnauthenticated, message.AttachmentOverQuota,
		message.AttachmentInvalid, message.AttachmentUnstored),
	reflect.TypeFor[message.AuthClass]():       strs(message.AuthPeer, message.AuthChild, message.AuthUnauthenticated, message.AuthController),
	reflect.TypeFor[message.PermissionState](): strs(message.PermissionPending, message.PermissionAnswered, message.PermissionCancelled),
	reflect.TypeFor[message.Behavior]():        strs(message.BehaviorAllow, message.BehaviorDeny),
	reflect.TypeFor[message.ControlKind](): strs(message.ControlInterrupt, message.ControlSetPermissionMode,
		message.ControlSetModel),
	reflect.TypeFor[message.PromptKind](): strs(message.PromptToolUse, message.PromptQuestion, message.PromptPlan, message.PromptOther),
}

func strs[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// enumOf is t's closed set of wire spellings, or nil when it has none.
func enumOf(t reflect.Type) []string {
	if e, ok := stringEnums[t]; ok {
		return e
	}
	switch t.Kind() {
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
	default:
		return nil
	}
	if !t.Implements(textType) || !reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) {
		return nil
	}
	// Every value that writes a spelling reading back as itself; the zero
	// value is "not set" (left out by omitempty) and has none.
	var out []string
	for i := uint64(1); i < 256; i++ {
		v := reflect.New(t).Elem()
		v.SetUint(i)
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil || len(b) == 0 {
			continue
		}
		back := reflect.New(t)
		if back.Interface().(encoding.TextUnmarshaler).UnmarshalText(b) != nil || back.Elem().Uint() != i {
			continue
		}
		out = append(out, string(b))
	}
	return out
}

// errorCodes are Error.code's values.
var errorCodes = []string{CodeBadRequest, CodeBadAddress, CodeNotFound, CodeMethodNotAllowed, CodeAmbiguous,
	CodeTooLarge, CodeUnauth, CodeForbidden, CodeBadHost, CodeConflict, CodeTimeout, CodeBadGateway, CodeInternal,
	CodeRateLimited, CodeRequestTimeout, CodeStorageFull, CodeNotStored, CodeKeyReused, CodeUnavailable}

// scopeNames are the scopes, in order.
func scopeNames() []string {
	var out []string
	for sc := ScopeRead; sc <= lastScope; sc++ {
		out = append(out, sc.String())
	}
	return out
}

// scopesPattern is a comma-separated list of scopes.
func scopesPattern() string {
	one := "(" + strings.Join(scopeNames(), "|") + ")"
	return "^(" + one + "(," + one + ")*)?$"
}

// promptVerbs are the verbs any prompt kind is answered with.
func promptVerbs() []string {
	var out []string
	for _, k := range stringEnums[reflect.TypeFor[message.PromptKind]()] {
		for _, v := range message.PromptKind(k).Verbs() {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

var permissionUpdateTypes = []string{message.UpdateAddRules, message.UpdateReplaceRules, message.UpdateRemoveRules,
	message.UpdateSetMode, message.UpdateAddDirectories, message.UpdateRemoveDirectories}

// fieldEnums are the closed sets of properties that are plain strings in
// Go, by declaring struct and JSON name.
var fieldEnums = map[string][]string{
	"Error.code":                        errorCodes,
	"Error.missing_scope":               scopeNames(),
	"PermissionRequest.verbs":           promptVerbs(),
	"PermissionAnswer.mode":             message.PermissionModes,
	"PermissionAnswer.rule_destination": message.RuleDestinations,
	"PermissionUpdate.type":             permissionUpdateTypes,
	"ControlBody.mode":                  message.PermissionModes,
	"DecideBody.action":                 {"release", "deny"},
	"DecideResult.action":               {"release", "deny"},
	"LegStatus.name":                    stringEnums[reflect.TypeFor[message.Protocol]()],
	"Health.status":                     {"ok"},
	"SendBody.mode":                     enumOf(reflect.TypeFor[message.Mode]()),
}

// fieldPatterns constrain plain strings whose grammar is closed.
var fieldPatterns = map[string]string{
	"LoginInfo.scopes": scopesPattern(),
	"PairBody.scopes":  scopesPattern(),
	"Pairing.scopes":   scopesPattern(),
}
