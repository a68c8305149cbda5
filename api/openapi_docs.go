package api

import "net/http"

// The words of the OpenAPI document: what each schema and each property
// is, keyed by the Go struct that declares the field and the field's JSON
// name (an embedded struct's fields read the same wherever it is
// embedded). A test fails when a property has no words here, or when
// words here describe no property: add them with the field.

var typeDocs = map[string]string{
	"ArchiveBody":       "POST /v1/remote/archive's request.",
	"AwayBody":          "PUT /v1/away's request.",
	"StartSpec":         "POST /v1/local/sessions's request: the hosted session to start.",
	"AwayStatus":        "The away switch and when it was last set.",
	"Attachment":        "A file sent with a message, staged where the receiver can copy it.",
	"CommandInfo":       "A slash command a remote session offers.",
	"ControlBody":       "A control request for a session.",
	"ControlReply":      "The control request and the session's answer to it.",
	"DecideBody":        "A decision on a held message.",
	"DecideResult":      "The decision taken on a held message.",
	"Drop":              "An inbound message that was turned away.",
	"Environment":       "An environment remote sessions run in.",
	"Error":             "The body of every 4xx and 5xx answer; code fixes the HTTP status.",
	"Event":             "One thing that happened; type says which of the other properties is set.",
	"FederationStatus":  "GET /v1/federation's answer. Without federation it is {\"enabled\": false}; with it, enabled is true and more properties describe the hosts, the NATS link, consumer lag and drops.",
	"Health":            "The liveness probe's answer.",
	"Held":              "An inbound message waiting for a person to release or deny it.",
	"IdleBody":          "A subscription to a peer's idle notice.",
	"IdleNotice":        "A peer's idle state, answering a subscription.",
	"IdleResult":        "An idle subscription and, with wait, the notice that answered it.",
	"Item":              "A message in the outbox: accepted for a remote session, kept until its server acknowledges it.",
	"Link":              "Where a remote session's live stream stands.",
	"LoginBody":         "A sign-in: a bearer token or a pairing code, one of the two.",
	"LoginInfo":         "Who the caller is signed in as.",
	"Message":           "One peer message, whichever leg it came from or goes to.",
	"ModelInfo":         "A model a remote session offers.",
	"NewRemoteSession":  "A remote session to create; every property may be left out.",
	"Outbound":          "A sent message and where it stands.",
	"PairBody":          "A pairing link to open.",
	"Pairing":           "A one-time link that signs a browser in.",
	"PermissionAnswer":  "An answer to a permission prompt.",
	"PermissionRequest": "A remote session's permission prompt: a tool call waiting to be allowed or denied, a question, or a plan to approve.",
	"PermissionRule":    "A permission rule, as Tool or Tool(content).",
	"PermissionUpdate":  "A change to a session's permissions: rules added, replaced or removed, the mode set, directories added or removed.",
	"Question":          "One question of an AskUserQuestion prompt.",
	"Readiness":         "The readiness probe's answer.",
	"Receipt":           "One status report about a sent message.",
	"RemoteControl":     "A control request or answer a remote session sent.",
	"RemoteEvent":       "One event of a followed remote session, decoded enough to show and route.",
	"SendBody":          "A message to send. The text goes in body; text is its deprecated spelling, read for one release.",
	"Session":           "A live session a leg can reach.",
	"SessionInfo":       "What a remote session told about itself.",
	"TitleBody":         "POST /v1/remote/title's request.",
	"Status":            "The gateway on one screen (gateway status).",
	"LegStatus":         "One leg in the gateway's status.",
}

const deprecatedText = "Deprecated: body's old spelling, read for one release. Send body instead; a request carrying both with different values is refused."

var fieldDocs = map[string]string{
	"ArchiveBody.address": "The remote session's address (bridge:<id>, a name or a ref).",

	"Attachment.path":       "Where the file is staged for the receiver; empty when refused.",
	"Attachment.file_name":  "The file's name as the sender gave it.",
	"Attachment.file_size":  "The file's size in bytes.",
	"Attachment.sha256":     "The file's SHA-256, lower-case hex.",
	"Attachment.media_type": "The file's media type, when known.",
	"Attachment.refused":    "Why an inbound attachment was not kept; the message was delivered without it.",

	"CommandInfo.name":          "The command's name, without the slash.",
	"CommandInfo.description":   "What the command does.",
	"CommandInfo.argument_hint": "How its arguments are written.",

	"ControlBody.address": "The session's address.",
	"ControlBody.kind":    "The control request.",
	"ControlBody.mode":    "set_permission_mode's mode.",
	"ControlBody.model":   "set_model's model, one the session offers (see /v1/remote/info); empty asks for the default.",

	"ControlResult.request_id":   "The control request's id, which the session's answer echoed.",
	"ControlResult.acknowledged": "The session answered success; false only when its answer cannot be read (a session the gateway does not follow).",
	"ControlResult.detail":       "What the session said with its answer.",

	"DecideBody.action":   "release lets the message through; deny turns it away.",
	"DecideBody.reason":   "Why, for the sender (deny).",
	"DecideResult.id":     "The held message's id.",
	"DecideResult.action": "The decision taken.",

	"Drop.msg_id": "The dropped message's id, when it had one.",
	"Drop.from":   "The sender's address, when known.",
	"Drop.reason": "Why it was turned away.",

	"Environment.environment_id": "The environment's id, for creating a session in it.",
	"Environment.name":           "The environment's name.",
	"Environment.kind":           "The environment's kind as the cloud names it (bridge: a machine running Claude Code's remote control).",
	"Environment.state":          "The environment's state as the cloud reports it.",
	"Environment.online":         "Whether it can take a session now.",
	"Environment.machine_name":   "A bridge environment's machine.",
	"Environment.directory":      "A bridge environment's working directory.",
	"Environment.branch":         "A bridge environment's git branch.",
	"Environment.max_sessions":   "How many sessions it runs at once, when limited.",

	"Error.error":         "What went wrong, for a person.",
	"Error.code":          "What went wrong, for a program; it fixes the HTTP status.",
	"Error.suggestions":   "Names close to an unknown one (not_found).",
	"Error.candidates":    "The sessions an ambiguous name matches (ambiguous).",
	"Error.missing_scope": "The scope the token lacks (forbidden).",
	"Error.retry_after":   "Seconds to wait before retrying (rate_limited), as in Retry-After.",

	"Event.id":         "The event's id, increasing; Last-Event-ID resumes after it.",
	"Event.type":       "What the event carries: the property of the same name (remote for remote_event, permission for permission_request, link for remote_link).",
	"Event.time":       "When it happened.",
	"Event.leg":        "The leg it happened on.",
	"Event.message":    "A message that arrived for the gateway (message).",
	"Event.receipt":    "A receipt that moved one of the gateway's messages (receipt).",
	"Event.idle":       "A subscribed peer went idle or exited (idle).",
	"Event.drop":       "An inbound message was turned away (drop).",
	"Event.held":       "An inbound message waits for release or denial (held).",
	"Event.session":    "A session appeared or left (session).",
	"Event.remote":     "A followed remote session said something (remote_event).",
	"Event.permission": "A permission prompt appeared, was answered or was withdrawn (permission_request).",
	"Event.link":       "A remote session's live stream connected, dropped or gave up (remote_link).",

	"FederationStatus.enabled": "Whether this gateway runs with federation.",

	"Health.status":  "Always ok: the process answers.",
	"Health.version": "The gateway's version.",

	"Held.message": "The held message.",
	"Held.reason":  "Why it is held, for a person.",
	"Held.since":   "When it was held.",
	"Held.expires": "When the hold ends unanswered (the message is then expired), if it does.",

	"IdleBody.to":      "The peer's address.",
	"IdleBody.wait":    "Block until the notice arrives (or timeout) and return it.",
	"IdleBody.timeout": "How long to wait, a Go duration (default 30s).",

	"IdleNotice.peer":            "The peer's address.",
	"IdleNotice.state":           "The peer's state as its protocol reports it (idle, or how it ended).",
	"IdleNotice.finished_at":     "When it went idle, when reported.",
	"IdleNotice.detail":          "What the peer said with it.",
	"IdleNotice.subscription_id": "The subscription it answers.",

	"IdleResult.subscription_id": "The subscription's id; the idle event carries it.",
	"IdleResult.address":         "The peer's address, resolved.",
	"IdleResult.notice":          "The notice, when waited for and received.",

	"Item.id":              "The message's id.",
	"Item.to":              "The remote session's address.",
	"Item.to_name":         "The remote session's name, when known.",
	"Item.leg":             "The leg that carries it.",
	"Item.body_preview":    "The start of the message's body on one line.",
	"Item.state":           "Where it stands.",
	"Item.attempts":        "How many times it was written to the server.",
	"Item.last_error":      "The last attempt's error.",
	"Item.failure":         "Why it failed for good (state failed).",
	"Item.accepted_at":     "When the gateway accepted it.",
	"Item.next_attempt_at": "When it is written again (state pending).",
	"Item.finished_at":     "When it was acknowledged or failed.",
	"Item.event_uuid":      "The uuid of the session event it became, once acknowledged.",

	"Link.session_id": "The remote session's id.",
	"Link.state":      "Where the stream stands.",
	"Link.attempt":    "The reconnection attempt, counting from 1 (reconnecting).",
	"Link.error":      "Why it dropped or gave up.",

	"LoginBody.token":   "A bearer token.",
	"LoginBody.pairing": "A one-time pairing code from POST /v1/pairings.",

	"LoginInfo.label":      "The token's label.",
	"LoginInfo.scopes":     "The scopes held, comma-separated.",
	"LoginInfo.csrf_token": "The CSRF token a browser session's state-changing requests carry in X-CSRF-Token.",
	"LoginInfo.expires_at": "When the browser session ends.",

	"Message.id":            "The message's id.",
	"Message.from":          "The sender's address.",
	"Message.from_name":     "The sender's display name.",
	"Message.from_session":  "The sender's session id.",
	"Message.to":            "The target's address.",
	"Message.to_name":       "The target's name.",
	"Message.to_pid":        "The target's process id, when a roster knows it.",
	"Message.to_session_id": "The target's session id, when a roster knows it.",
	"Message.body":          "The message's text.",
	"Message.mode":          "The sender's permission review class, as attested.",
	"Message.hop_chain":     "The relays the message passed through, each 24 lower-case hex characters.",
	"Message.attested":      "Whether the envelope was parsed and round-tripped.",
	"Message.auth":          "How the inbound connection proved itself.",
	"Message.controller":    "The controller grant's label (auth controller).",
	"Message.protocol":      "The leg the message came from or goes to.",
	"Message.attachments":   "Files sent with the message.",
	"Message.from_plugin":   "The plugin that sent it, when one did.",
	"Message.alias_of":      "For a message to one of the gateway's aliases: the address of the session on another leg it stands for.",
	"Message.unpaced":       "It was sent past the receiver's published limits (for tests and diagnosis).",
	"Message.time":          "When the message was made.",

	"ModelInfo.value":        "The model's id, as set_model takes it.",
	"ModelInfo.display_name": "The model's name for people.",
	"ModelInfo.description":  "What the model is.",

	"NewRemoteSession.title":          "The session's title.",
	"NewRemoteSession.environment_id": "The environment to run it in (see /v1/remote/environments).",
	"NewRemoteSession.model":          "The model to run.",
	"NewRemoteSession.repo":           "A GitHub repository as its source, OWNER/REPO.",
	"NewRemoteSession.branch":         "The repository's branch (with repo).",
	"NewRemoteSession.body":           "The first prompt.",
	"NewRemoteSession.text":           deprecatedText,

	"Outbound.message":  "The message as sent.",
	"Outbound.status":   "Where it stands: the last receipt's status.",
	"Outbound.receipts": "The receipts that moved it, oldest first.",

	"PairBody.scopes": "Scopes beside read for the paired browser, comma-separated; each must be one the caller holds.",
	"PairBody.ttl":    "How long the link works, a Go duration (default 10m, at most 24h).",

	"Pairing.code":       "The one-time code; shown only here.",
	"Pairing.url":        "The link to open in the browser.",
	"Pairing.scopes":     "The scopes the browser gets, comma-separated.",
	"Pairing.expires_at": "When the link stops working.",

	"PermissionAnswer.behavior":         "allow or deny the tool call.",
	"PermissionAnswer.updated_input":    "A replacement for the tool's input (allow); absent keeps it.",
	"PermissionAnswer.answers":          "AskUserQuestion selections by question text: one label for a single-select question, any for a multi-select one.",
	"PermissionAnswer.message":          "The reason given to the model (deny).",
	"PermissionAnswer.rules":            "Rules to add with this answer's behavior.",
	"PermissionAnswer.rule_destination": "Where rules are saved (default localSettings).",
	"PermissionAnswer.suggestions":      "The prompt's suggestions to apply, by number from 1 (allow).",
	"PermissionAnswer.mode":             "A permission mode to switch the session to in the same answer (allow), as approving a plan does.",
	"PermissionAnswer.by":               "Who answered: cli, api, or a session's address.",

	"PermissionRequest.id":          "The gateway's short id for the prompt, stable across reconnects.",
	"PermissionRequest.session_id":  "The remote session's id.",
	"PermissionRequest.address":     "The remote session's address, bridge:<session id>.",
	"PermissionRequest.leg":         "The leg it is pending on (federation for another host's).",
	"PermissionRequest.host":        "The federation host it is pending on, when federation is on.",
	"PermissionRequest.request_id":  "The control request's id; the answer echoes it.",
	"PermissionRequest.tool_name":   "The tool that asks.",
	"PermissionRequest.kind":        "What the prompt asks for, and so which verbs answer it.",
	"PermissionRequest.verbs":       "The verbs that answer it, the usual one first.",
	"PermissionRequest.tool_use_id": "The tool call's id.",
	"PermissionRequest.description": "What the tool call does, as the session put it.",
	"PermissionRequest.input":       "The tool's input, as the session sent it.",
	"PermissionRequest.questions":   "AskUserQuestion's questions, decoded from input.",
	"PermissionRequest.suggestions": "Permission updates the session offers with the prompt; an allow picks them by number, from 1.",
	"PermissionRequest.created_at":  "When the prompt appeared.",
	"PermissionRequest.state":       "Where the prompt stands.",
	"PermissionRequest.answer":      "The answer, once answered.",
	"PermissionRequest.answered_by": "Who settled the prompt, once settled: token:ID or console:ID (the API caller's grant), socket:cli (the control socket), notification, an approver's or MCP session's address, remote (answered on claude.ai).",
	"PermissionRequest.source":      "How the prompt reached the gateway: remote (a claude.ai session's stream), hook (a local Claude Code session's PermissionRequest hook, gateway hooks install), channel (an MCP channel's permission relay).",
	"PermissionRequest.name":        "The session's name as gateway sessions shows it, when it has one.",
	"AwayStatus.away":               "Whether the user is away: local prompts then wait for an answer from elsewhere.",
	"AwayStatus.since":              "When the switch was last set.",
	"AwayBody.away":                 "true to switch away on, false to switch it off.",
	"StartSpec.agent":               "The CLI to run: claude (Claude Code) or qwen (Qwen Code), found on the gateway's PATH or at --claude-path / --qwen-path; or claude-bg, a Claude Code background agent that Claude Code's own daemon runs (prompt required).",
	"StartSpec.cwd":                 "The directory the session works in: it must exist and belong to the gateway's user.",
	"StartSpec.name":                "The session's name (lowercase letters, digits, '.', '_', '-'; at most 63), its address hosted:NAME; default agent-XXXXXX.",
	"StartSpec.prompt":              "The first user turn; empty starts the session idle, waiting for a message.",
	"StartSpec.permission_mode":     "The permission mode it starts in: default, acceptEdits, plan or bypassPermissions; empty is the CLI's own default.",
	"StartSpec.model":               "The model it starts with; empty is the CLI's own default.",

	"PermissionRule.tool_name":    "The tool the rule is about.",
	"PermissionRule.rule_content": "What of the tool's use it matches, such as a command; absent matches every use.",

	"PermissionUpdate.type":        "The kind of change.",
	"PermissionUpdate.rules":       "The rules added, replaced or removed.",
	"PermissionUpdate.behavior":    "The rules' behavior: allow, deny or ask.",
	"PermissionUpdate.destination": "Where the change is saved, such as localSettings or session.",
	"PermissionUpdate.mode":        "The mode set (setMode).",
	"PermissionUpdate.directories": "The directories added or removed.",

	"Question.question":     "The question.",
	"Question.header":       "A short label for it.",
	"Question.multi_select": "Whether more than one option may be picked.",
	"Question.options":      "The options' labels.",

	"Readiness.ready": "Whether every enabled leg is ready.",
	"Readiness.legs":  "Each leg's state by name: ready, or why not.",

	"Receipt.msg_id":      "The message it is about.",
	"Receipt.status":      "The status it moves the message to.",
	"Receipt.reason":      "The receiver's words, for a person.",
	"Receipt.detail":      "The receiver's status detail, such as why it refused.",
	"Receipt.drop_reason": "Why it was dropped (status dropped).",
	"Receipt.from":        "Who sent the receipt.",
	"Receipt.time":        "When it was received.",

	"RemoteControl.request_id": "The control request's id.",
	"RemoteControl.subtype":    "A request's subtype.",
	"RemoteControl.unserved":   "The gateway does not serve the subtype and answered at once with an error, so the session does not wait.",
	"RemoteControl.error":      "An error answer's text.",

	"RemoteEvent.session_id": "The remote session's id.",
	"RemoteEvent.address":    "The remote session's address, bridge:<session id>.",
	"RemoteEvent.kind":       "The event's type: user, assistant, result, system, control_request, control_response, control_cancel_request, or one the gateway does not know (kept in raw).",
	"RemoteEvent.uuid":       "The event's uuid.",
	"RemoteEvent.seq":        "The stream's sequence number (v2 streams).",
	"RemoteEvent.message_id": "Groups the streamed copies of one assistant message.",
	"RemoteEvent.final":      "This copy is the message's last (it has a stop reason, or is a result).",
	"RemoteEvent.text":       "The event's text for display: an assistant message's text so far, a user prompt, a result. Display text of an event, not a message body.",
	"RemoteEvent.control":    "The control request or answer (control_request, control_response).",
	"RemoteEvent.raw":        "The whole event as the session sent it.",

	"SendBody.to":        "The target: an address, a name or a ref.",
	"SendBody.body":      "The message's text, at most 524288 bytes (512 KiB; longer is a 413 too_large, nothing sent). Required (or its deprecated spelling text).",
	"SendBody.text":      deprecatedText,
	"SendBody.mode":      "The sender's permission review class to attest; absent attests none.",
	"SendBody.from_name": "The display name to send as.",
	"SendBody.files":     "Files to attach, by path in the files directory (needs the files scope).",
	"SendBody.wait":      "Block until a final receipt (or timeout) and answer with it.",
	"SendBody.timeout":   "How long to wait, a Go duration (default 30s).",
	"SendBody.unpaced":   "Send even when the receiver's published limits say it would be dropped.",

	"Session.address":           "The address that reaches it.",
	"Session.protocol":          "The leg it lives on.",
	"Session.name":              "Its name.",
	"Session.ref":               "Its short ref.",
	"Session.native_ref":        "The ref the session's own CLI shows, when different.",
	"Session.session_id":        "Its session id.",
	"Session.pid":               "Its process id; 0 when no local process stands for it (remote sessions).",
	"Session.kind":              "Its kind as its leg reports it (such as interactive, tui, external, alias).",
	"Session.status":            "Its status as its leg reports it (such as idle or busy), when reported.",
	"Session.cwd":               "Its working directory.",
	"Session.version":           "The version of its CLI.",
	"Session.reachable":         "Whether a send can reach it now.",
	"Session.started_at":        "When it started: its registry record's start time, or its process's; absent when unknown.",
	"Session.title":             "A remote session's title; name is the alias name derived from it.",
	"Session.alias_of":          "For an alias the gateway publishes: the address of the session it stands for.",
	"Session.stale":             "It comes from its leg's last good listing: the leg could not list afresh.",
	"Session.host":              "The federation host that reaches it, when federation is on.",
	"Session.bridge_session_id": "A local Claude Code session's bridge id, when signed in: bridge:<it> reaches it over its local socket.",

	"SessionInfo.session_id":      "The remote session's id.",
	"SessionInfo.address":         "Its address, bridge:<session id>.",
	"SessionInfo.followed":        "The gateway keeps it live; only then does it hear initialize's answer and control answers.",
	"SessionInfo.initialized":     "initialize was answered; models, commands and output_style are its answer's.",
	"SessionInfo.models":          "The models it offers.",
	"SessionInfo.commands":        "The slash commands it offers.",
	"SessionInfo.output_style":    "Its output style.",
	"SessionInfo.permission_mode": "Its permission mode as last reported or accepted; absent when not known.",
	"SessionInfo.model":           "Its model as last reported or accepted; absent when not known.",
	"SessionInfo.updated":         "When any of this last changed.",

	"Status.version":         "The gateway's version.",
	"Status.started_at":      "When the gateway started.",
	"Status.uptime_seconds":  "Seconds since it started.",
	"Status.legs":            "Each leg, by name.",
	"Status.links":           "The remote sessions' live streams as their last kept link event left them; a session whose events have scrolled out is absent.",
	"Status.pending_prompts": "Permission prompts waiting for an answer.",
	"Status.held":            "Inbound messages held for a decision.",
	"Status.outbox_depth":    "Remote messages stored and not yet acknowledged; absent without a remote leg.",
	"Status.federation":      "GET /v1/federation's answer; absent without federation.",
	"Status.console_url":     "Where the web console and the API are reached over TCP (serve --api); absent without it.",

	"LegStatus.name":     "The leg.",
	"LegStatus.state":    "ready, or why not.",
	"LegStatus.sessions": "How many of its own sessions it lists.",
	"LegStatus.aliases":  "How many aliases the gateway publishes on it (the bridge).",
	"LegStatus.hosts":    "Its sessions counted by federation host, when any has one.",

	"TitleBody.address": "The remote session's address.",
	"TitleBody.title":   "The new title.",
}

var deprecatedFields = map[string]bool{"SendBody.text": true, "NewRemoteSession.text": true}

// eitherOf: a struct whose text may come under either of two names needs
// one of them.
var eitherOf = map[string][2]string{"SendBody": {"body", "text"}}

// pathParamDocs describe each route's path parameters, by path and name.
var pathParamDocs = map[string]string{
	"/v1/messages/{id} id":           "The message's id, as POST /v1/messages answered it.",
	"/v1/held/{id} id":               "The held message's id.",
	"/v1/permissions/{id} id":        "The prompt's id.",
	"/v1/local/sessions/{name} name": "The hosted session's name (or its address hosted:NAME).",
	"/v1/actions/{token} token":      "The signed action from the notification's link.",
}

// headerParams are the request headers routes read, by pattern.
var headerParams = map[string][]param{
	"POST /v1/messages": {{IdempotencyHeader, "string", "1 to 255 printable ASCII characters: a retry with the same key and body answers the first send and sends nothing; another body under the key is 422."}},
	"GET /v1/events":    {{"Last-Event-ID", "string", "Replay the kept events after this id (the query's last_event_id does the same)."}},
}

// replyHeaders are the success headers routes set, by pattern.
var replyHeaders = map[string]map[string]any{
	"POST /v1/messages": {
		ReplayedHeader:  map[string]any{"description": "true when the answer is the first send's under the same Idempotency-Key; nothing was sent again.", "schema": map[string]any{"type": "string", "enum": []string{"true"}}},
		ForgottenHeader: map[string]any{"description": "true on a replayed answer for a message the gateway no longer tracks (a restart, or many sends since): its status is the one the first send was answered with; nothing was sent again.", "schema": map[string]any{"type": "string", "enum": []string{"true"}}},
	},
}

// plainErrors are the 4xx answers a route writes as plain text for a
// person (a notification's link opened in a browser), by pattern; its
// other 4xx are Error objects.
var plainErrors = map[string]map[int]string{
	"GET /v1/actions/{token}": {
		http.StatusForbidden: "A forged link: its signature does not check out.",
		http.StatusConflict:  "The prompt was answered or the message decided meanwhile.",
		http.StatusGone:      "A used or expired link.",
	},
}

// streamRoutes are the routes that hold an event stream or a wait, and
// are refused past MaxStreams or a client's MaxStreamsPerGrant.
var streamRoutes = map[string]string{
	"GET /v1/events":        "the stream",
	"GET /v1/messages/{id}": "?wait",
	"POST /v1/messages":     `"wait": true`,
	"POST /v1/idle":         `"wait": true`,
}
