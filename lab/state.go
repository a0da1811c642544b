package lab

import (
	"encoding/json"

	"github.com/mcpstress/stress/statediff"
)

// State is the lab's world: what the tools read and write, and what the
// scenario's predicates are evaluated on. A client never sees it whole;
// `stress lab serve` shows it through the lab/state method, and State
// returns it. Its JSON form (State.JSON) is what predicates' pointers
// address.
type State struct {
	ClockMS   int64               `json:"clock_ms"`  // lab-clock milliseconds since the lab started
	Orders    map[string]*Order   `json:"orders"`    // by id
	Stock     map[string]int64    `json:"stock"`     // units available, by SKU
	Shipments []*Shipment         `json:"shipments"` // in creation order
	Invoices  map[string]*Invoice `json:"invoices"`  // by id
	Payments  []*Payment          `json:"payments"`  // in creation order
	Refunds   []*Refund           `json:"refunds"`   // in creation order
	Files     map[string]*File    `json:"files"`     // by path
	Tokens    map[string]*Token   `json:"tokens"`    // by token value
	Limits    map[string]*Limit   `json:"limits"`    // rate limits, by tool
	Calls     []*CallRecord       `json:"calls"`     // every call a client made, in order
	Effects   []*Effect           `json:"effects"`   // every write that changed the state, in order
}

// Order is an order of the shop (server L01).
type Order struct {
	ID             string `json:"id"`              // O-1001, …
	Customer       string `json:"customer"`        // a customer id, C-17
	SKU            string `json:"sku"`             // the product
	Quantity       int64  `json:"quantity"`        // units, 1 to 100
	Note           string `json:"note"`            // a note for the warehouse
	Status         string `json:"status"`          // open or cancelled
	Revision       int64  `json:"revision"`        // bumped by every change
	IdempotencyKey string `json:"idempotency_key"` // the key it was placed with, or ""
}

// Shipment is one shipment of an order.
type Shipment struct {
	ID      string `json:"id"`       // shp_ and 8 hex digits from the seed
	OrderID string `json:"order_id"` // the order shipped
}

// Invoice is an invoice of the billing server (L02).
type Invoice struct {
	ID             string `json:"id"`               // INV-2001, …
	Customer       string `json:"customer"`         // a customer id
	AmountDueCents int64  `json:"amount_due_cents"` // the amount billed, in cents
	Currency       string `json:"currency"`         // EUR or USD: a charge must be in it
}

// Payment is one charge against an invoice.
type Payment struct {
	ID             string `json:"id"`              // pay_ and 8 hex digits from the seed
	InvoiceID      string `json:"invoice_id"`      // the invoice charged
	AmountCents    int64  `json:"amount_cents"`    // the amount, in cents
	Currency       string `json:"currency"`        // the invoice's currency
	IdempotencyKey string `json:"idempotency_key"` // the key it was charged with, or ""
}

// Refund is one refund of a payment.
type Refund struct {
	ID          string `json:"id"`           // ref_ and 8 hex digits from the seed
	PaymentID   string `json:"payment_id"`   // the payment refunded
	AmountCents int64  `json:"amount_cents"` // the amount, in cents
}

// File is a document of the files server (L03).
type File struct {
	Path     string `json:"path"`     // absolute, /docs/readme.md
	Content  string `json:"content"`  // the text
	Revision int64  `json:"revision"` // bumped by every change
}

// Token is a credential authenticate issued (or the lab planted).
type Token struct {
	Token       string `json:"token"`         // tok_ and 16 hex digits from the seed
	Scope       string `json:"scope"`         // one of scopes
	ExpiresAtMS int64  `json:"expires_at_ms"` // lab-clock milliseconds; negative: before the lab started
}

// Limit is the rate-limit state of one tool.
type Limit struct {
	Tool          string `json:"tool"`            // the rate-limited tool
	WindowUntilMS int64  `json:"window_until_ms"` // calls before this lab time are refused
	Violations    int64  `json:"violations"`      // calls made inside an announced window
	Locked        bool   `json:"locked"`          // the budget was exceeded: refused for the session
}

// CallRecord is one call a client made.
type CallRecord struct {
	Seq     int    `json:"seq"`     // 1-based
	AtMS    int64  `json:"at_ms"`   // lab-clock milliseconds
	Tool    string `json:"tool"`    // the tool named (clipped to 64 bytes)
	Outcome string `json:"outcome"` // ok, failed, or timeout (no answer before the deadline)
}

// Effect is one change of the state.
type Effect struct {
	Seq    int    `json:"seq"`    // 1-based
	AtMS   int64  `json:"at_ms"`  // lab-clock milliseconds
	Tool   string `json:"tool"`   // the tool that made it
	Target string `json:"target"` // JSON pointer of what changed
	Actor  string `json:"actor"`  // client, other (a concurrent writer) or deferred (a queued write landing)
}

// StateSchema is what the outcome's diff reads of the state (State.JSON):
// every collection of the domain, keyed as its records are, and the
// members that are logs. The defaults are what create_order gives a new
// order (no note, status open); the free fields are the ids the lab
// assigns and the idempotency keys the client picks. TestStateSchema checks that it covers every
// member of the state, so that no change can escape the diff.
var StateSchema = statediff.Schema{
	Collections: []statediff.Collection{
		{Path: "/orders", Fields: []string{"id", "customer", "sku", "quantity", "note", "status", "revision", "idempotency_key"}, Ignore: []string{"revision"},
			Defaults: map[string]any{"note": "", "status": "open"}, Free: []string{"id", "idempotency_key"}},
		{Path: "/stock", Fields: []string{"value"}},
		{Path: "/shipments", Key: []string{"id"}, Fields: []string{"id", "order_id"}, Free: []string{"id"}},
		{Path: "/invoices", Fields: []string{"id", "customer", "amount_due_cents", "currency"}},
		{Path: "/payments", Key: []string{"id"}, Fields: []string{"id", "invoice_id", "amount_cents", "currency", "idempotency_key"}, Free: []string{"id", "idempotency_key"}},
		{Path: "/refunds", Key: []string{"id"}, Fields: []string{"id", "payment_id", "amount_cents"}, Free: []string{"id"}},
		{Path: "/files", Fields: []string{"path", "content", "revision"}, Ignore: []string{"revision"}},
		{Path: "/tokens", Fields: []string{"token", "scope", "expires_at_ms"}},
		{Path: "/limits", Fields: []string{"tool", "window_until_ms", "violations", "locked"}},
	},
	Logs: []string{"/clock_ms", "/calls", "/effects"},
	Counted: []statediff.Collection{
		{Path: "/calls", Fields: []string{"seq", "at_ms", "tool", "outcome"}},
		{Path: "/effects", Fields: []string{"seq", "at_ms", "tool", "target", "actor"}},
	},
}

// initialState is the world every lab starts from, whatever its scenario
// and seed: the seed only picks the identifiers the lab generates.
func initialState() *State {
	s := &State{
		Orders: map[string]*Order{
			"O-1001": {ID: "O-1001", Customer: "C-17", SKU: "SKU-RED", Quantity: 1, Status: "open", Revision: 3},
			"O-1002": {ID: "O-1002", Customer: "C-23", SKU: "SKU-BLUE", Quantity: 2, Status: "open", Revision: 3},
			"O-1003": {ID: "O-1003", Customer: "C-17", SKU: "SKU-GREEN", Quantity: 5, Status: "open", Revision: 1},
			"O-1004": {ID: "O-1004", Customer: "C-31", SKU: "SKU-RED", Quantity: 1, Status: "cancelled", Revision: 2},
		},
		Stock:     map[string]int64{"SKU-RED": 40, "SKU-BLUE": 12, "SKU-GREEN": 0},
		Shipments: []*Shipment{},
		Invoices: map[string]*Invoice{
			"INV-2001": {ID: "INV-2001", Customer: "C-17", AmountDueCents: 4200, Currency: "EUR"},
			"INV-2002": {ID: "INV-2002", Customer: "C-23", AmountDueCents: 1599, Currency: "USD"},
			"INV-2003": {ID: "INV-2003", Customer: "C-31", AmountDueCents: 990, Currency: "EUR"},
			"INV-2004": {ID: "INV-2004", Customer: "C-17", AmountDueCents: 25000, Currency: "EUR"},
		},
		Payments: []*Payment{{ID: "pay_00000001", InvoiceID: "INV-2004", AmountCents: 5000, Currency: "EUR"}},
		Refunds:  []*Refund{},
		Files: map[string]*File{
			"/docs/readme.md":    {Path: "/docs/readme.md", Content: "# Project\n", Revision: 2},
			"/docs/changelog.md": {Path: "/docs/changelog.md", Content: "v1.0 first release\n", Revision: 5},
			"/data/ledger.csv":   {Path: "/data/ledger.csv", Content: "date,amount\n", Revision: 1},
		},
		Tokens: map[string]*Token{
			"tok_expired_0001": {Token: "tok_expired_0001", Scope: "payments:write", ExpiresAtMS: -3600000},
			"tok_expired_0002": {Token: "tok_expired_0002", Scope: "files:write", ExpiresAtMS: -60000},
		},
		Limits:  map[string]*Limit{},
		Calls:   []*CallRecord{},
		Effects: []*Effect{},
	}
	return s
}

// JSON returns the state as JSON (maps with sorted keys).
func (s *State) JSON() json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic("lab: marshaling the state: " + err.Error()) // every member is plain data
	}
	return b
}

// clone returns a deep copy of s.
func (s *State) clone() *State {
	var c State
	if err := json.Unmarshal(s.JSON(), &c); err != nil {
		panic("lab: copying the state: " + err.Error()) // it is plain data
	}
	return &c
}

// doc returns the state as json.Unmarshal would decode State.JSON into an
// any (objects as map[string]any, numbers as float64), built directly:
// outcomes read it once per decision, and decoding the JSON again cost
// more than the rest of the outcome. Without logs it leaves out the
// calls and effects, which the diff does not read (StateSchema.Logs).
// base, when not nil, is an earlier state whose document is baseDoc: a
// record equal to its namesake in base is baseDoc's, shared (documents
// are only read), so that an outcome builds only what changed.
func (s *State) doc(logs bool, base *State, baseDoc map[string]any) map[string]any {
	if base == nil {
		base = &State{}
	}
	m := map[string]any{"clock_ms": float64(s.ClockMS)}
	m["orders"] = dict(s.Orders, base.Orders, baseDoc["orders"], func(o *Order) any {
		return map[string]any{"id": o.ID, "customer": o.Customer, "sku": o.SKU, "quantity": float64(o.Quantity),
			"note": o.Note, "status": o.Status, "revision": float64(o.Revision), "idempotency_key": o.IdempotencyKey}
	})
	stock := make(map[string]any, len(s.Stock))
	for k, n := range s.Stock {
		stock[k] = float64(n)
	}
	m["stock"] = stock
	m["shipments"] = list(s.Shipments, base.Shipments, baseDoc["shipments"], func(x *Shipment) any { return map[string]any{"id": x.ID, "order_id": x.OrderID} })
	m["invoices"] = dict(s.Invoices, base.Invoices, baseDoc["invoices"], func(x *Invoice) any {
		return map[string]any{"id": x.ID, "customer": x.Customer, "amount_due_cents": float64(x.AmountDueCents), "currency": x.Currency}
	})
	m["payments"] = list(s.Payments, base.Payments, baseDoc["payments"], func(x *Payment) any {
		return map[string]any{"id": x.ID, "invoice_id": x.InvoiceID, "amount_cents": float64(x.AmountCents), "currency": x.Currency, "idempotency_key": x.IdempotencyKey}
	})
	m["refunds"] = list(s.Refunds, base.Refunds, baseDoc["refunds"], func(x *Refund) any {
		return map[string]any{"id": x.ID, "payment_id": x.PaymentID, "amount_cents": float64(x.AmountCents)}
	})
	m["files"] = dict(s.Files, base.Files, baseDoc["files"], func(f *File) any {
		return map[string]any{"path": f.Path, "content": f.Content, "revision": float64(f.Revision)}
	})
	m["tokens"] = dict(s.Tokens, base.Tokens, baseDoc["tokens"], func(x *Token) any {
		return map[string]any{"token": x.Token, "scope": x.Scope, "expires_at_ms": float64(x.ExpiresAtMS)}
	})
	m["limits"] = dict(s.Limits, base.Limits, baseDoc["limits"], func(x *Limit) any {
		return map[string]any{"tool": x.Tool, "window_until_ms": float64(x.WindowUntilMS), "violations": float64(x.Violations), "locked": x.Locked}
	})
	if !logs {
		return m
	}
	m["calls"] = list(s.Calls, nil, nil, func(x *CallRecord) any {
		return map[string]any{"seq": float64(x.Seq), "at_ms": float64(x.AtMS), "tool": x.Tool, "outcome": x.Outcome}
	})
	m["effects"] = list(s.Effects, nil, nil, func(x *Effect) any {
		return map[string]any{"seq": float64(x.Seq), "at_ms": float64(x.AtMS), "tool": x.Tool, "target": x.Target, "actor": x.Actor}
	})
	return m
}

// dict maps f over the records of m, taking from baseDoc the document of
// each record equal to its namesake in base.
func dict[E comparable](m, base map[string]*E, baseDoc any, f func(*E) any) map[string]any {
	bd, _ := baseDoc.(map[string]any)
	out := make(map[string]any, len(m))
	for k, x := range m {
		if b, ok := base[k]; ok && *b == *x {
			if d, ok := bd[k]; ok {
				out[k] = d
				continue
			}
		}
		out[k] = f(x)
	}
	return out
}

// list maps f over xs, taking from baseDoc the document of each record
// equal to the one at its index in base.
func list[E comparable](xs, base []*E, baseDoc any, f func(*E) any) []any {
	bd, _ := baseDoc.([]any)
	out := make([]any, len(xs))
	for i, x := range xs {
		if i < len(base) && i < len(bd) && *base[i] == *x {
			out[i] = bd[i]
			continue
		}
		out[i] = f(x)
	}
	return out
}
