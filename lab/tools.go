package lab

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstress/stress/statediff"
)

// tool is one tool of the lab's domain: its MCP definition (schemas and
// honest annotations) and what it does to the state.
type tool struct {
	name, server, title, desc string
	params                    []param
	output                    map[string]any // JSON Schema of a success's structuredContent
	readOnly                  bool           // reads only
	destructive               bool           // may overwrite or delete (meaningful for writes)
	idempotent                bool           // a repeat with the same arguments has no further effect
	scope                     string         // the credential scope an authentication fault requires
	batch                     string         // the array argument of a batch tool, or ""
	keyed                     bool           // accepts idempotency_key
	// run applies the call to the state and returns the success's
	// structured content. A batch tool applies at most limit items (all
	// when limit < 0), after checking every item.
	run func(l *Lab, a args, limit int) (any, *failure)
}

// Servers are the lab's servers: pseudonyms (the bootstrap clusters of a
// lab study) and the MCP implementation names they announce.
var Servers = map[string]string{
	"L01": "lab-shop",    // orders, stock and shipments
	"L02": "lab-billing", // invoices, payments and refunds
	"L03": "lab-files",   // documents
}

// scopes are the credential scopes authenticate grants.
var scopes = []string{"orders:write", "payments:write", "files:write"}

var (
	pAuthToken  = param{name: "auth_token", typ: "string", desc: "a token from authenticate, for tools that require one", maxLen: 64}
	pIdemKey    = param{name: "idempotency_key", typ: "string", desc: "a client-chosen key; a repeat with the same key returns the first result instead of acting again", maxLen: 64}
	pOrderID    = param{name: "order_id", typ: "string", desc: "an order id, e.g. O-1001", required: true, maxLen: 32}
	pInvoiceID  = param{name: "invoice_id", typ: "string", desc: "an invoice id, e.g. INV-2001", required: true, maxLen: 32}
	pPath       = param{name: "path", typ: "string", desc: "an absolute file path, e.g. /docs/readme.md", required: true, maxLen: 128}
	pRevision   = param{name: "expected_revision", typ: "integer", desc: "the revision the change is based on; the write is refused if the record has moved on", min: 1, max: 1 << 30}
	pAmount     = param{name: "amount_cents", typ: "integer", desc: "the amount in cents", required: true, min: 1, max: 1000000}
	pCurrency   = param{name: "currency", typ: "string", desc: "the currency of the amount", required: true, enum: []string{"EUR", "USD"}}
	pContent    = param{name: "content", typ: "string", desc: "the whole new content", required: true, maxLen: 4096}
	orderOutput = object(map[string]any{
		"id": str, "customer": str, "sku": str, "quantity": integer, "note": str, "status": str, "revision": integer,
	}, "id", "customer", "sku", "quantity", "status", "revision")
	paymentOutput = object(map[string]any{
		"id": str, "invoice_id": str, "amount_cents": integer, "currency": str,
	}, "id", "invoice_id", "amount_cents", "currency")
	fileOutput = object(map[string]any{"path": str, "revision": integer, "size": integer}, "path", "revision", "size")
)

var (
	str     = map[string]any{"type": "string"}
	integer = map[string]any{"type": "integer"}
	boolean = map[string]any{"type": "boolean"}
)

func object(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func arrayOf(item map[string]any) map[string]any {
	return map[string]any{"type": "array", "items": item}
}

// tools is the domain, in the order tools/list shows it.
var tools = []*tool{
	// Every server.
	{name: "authenticate", server: "*", title: "Authenticate",
		desc:   "Obtains a short-lived token for a scope; pass it as auth_token to tools that require one.",
		params: []param{{name: "scope", typ: "string", desc: "the scope the token grants", required: true, enum: scopes}},
		output: object(map[string]any{"token": str, "scope": str, "expires_at_ms": integer}, "token", "scope", "expires_at_ms"),
		run:    (*Lab).authenticate},

	// L01: the shop.
	{name: "get_order", server: "L01", title: "Get order", readOnly: true, idempotent: true,
		desc: "Returns one order.", params: []param{pOrderID, pAuthToken}, output: orderOutput, scope: "orders:write",
		run: (*Lab).getOrder},
	{name: "list_orders", server: "L01", title: "List orders", readOnly: true, idempotent: true,
		desc:   "Lists orders, optionally of one customer.",
		params: []param{{name: "customer", typ: "string", desc: "a customer id, e.g. C-17", maxLen: 32}, pAuthToken},
		output: object(map[string]any{"orders": arrayOf(orderOutput)}, "orders"), scope: "orders:write",
		run: (*Lab).listOrders},
	{name: "get_stock", server: "L01", title: "Get stock", readOnly: true, idempotent: true,
		desc:   "Returns the units of a product in stock.",
		params: []param{{name: "sku", typ: "string", desc: "a product SKU, e.g. SKU-RED", required: true, maxLen: 32}, pAuthToken},
		output: object(map[string]any{"sku": str, "available": integer}, "sku", "available"), scope: "orders:write",
		run: (*Lab).getStock},
	{name: "create_order", server: "L01", title: "Create order", keyed: true,
		desc: "Places a new order. Each call places another order unless it repeats an idempotency_key.",
		params: []param{
			{name: "customer", typ: "string", desc: "a customer id, e.g. C-17", required: true, maxLen: 32},
			{name: "sku", typ: "string", desc: "a product SKU, e.g. SKU-RED", required: true, maxLen: 32},
			{name: "quantity", typ: "integer", desc: "units to order", required: true, min: 1, max: 100},
			{name: "note", typ: "string", desc: "a note for the warehouse", maxLen: 200},
			pIdemKey, pAuthToken},
		output: orderOutput, scope: "orders:write", run: (*Lab).createOrder},
	{name: "update_order", server: "L01", title: "Update order", destructive: true, idempotent: true,
		desc: "Changes the quantity or note of an open order. With expected_revision, the change is refused if the order has changed since that revision.",
		params: []param{pOrderID,
			{name: "quantity", typ: "integer", desc: "the new number of units", min: 1, max: 100},
			{name: "note", typ: "string", desc: "the new note", maxLen: 200},
			pRevision, pAuthToken},
		output: orderOutput, scope: "orders:write", run: (*Lab).updateOrder},
	{name: "cancel_order", server: "L01", title: "Cancel order", destructive: true, idempotent: true,
		desc: "Cancels an order.", params: []param{pOrderID, pAuthToken},
		output: orderOutput, scope: "orders:write", run: (*Lab).cancelOrder},
	{name: "ship_orders", server: "L01", title: "Ship orders", batch: "shipments",
		desc: "Creates a shipment for each listed open order, in order. Each call creates new shipments.",
		params: []param{{name: "shipments", typ: "array", desc: "the orders to ship", required: true, minItems: 1, maxItems: 20,
			items: []param{pOrderID}}, pAuthToken},
		output: object(map[string]any{"shipments": arrayOf(object(map[string]any{"id": str, "order_id": str}, "id", "order_id")), "applied": integer}, "shipments", "applied"),
		scope:  "orders:write", run: (*Lab).shipOrders},

	// L02: billing.
	{name: "get_invoice", server: "L02", title: "Get invoice", readOnly: true, idempotent: true,
		desc: "Returns one invoice with the payments made against it.", params: []param{pInvoiceID, pAuthToken},
		output: object(map[string]any{"id": str, "customer": str, "amount_due_cents": integer, "currency": str, "paid_cents": integer},
			"id", "customer", "amount_due_cents", "currency", "paid_cents"),
		scope: "payments:write", run: (*Lab).getInvoice},
	{name: "list_payments", server: "L02", title: "List payments", readOnly: true, idempotent: true,
		desc:   "Lists payments, optionally against one invoice.",
		params: []param{{name: "invoice_id", typ: "string", desc: "an invoice id, e.g. INV-2001", maxLen: 32}, pAuthToken},
		output: object(map[string]any{"payments": arrayOf(paymentOutput)}, "payments"), scope: "payments:write",
		run: (*Lab).listPayments},
	{name: "charge_payment", server: "L02", title: "Charge payment", keyed: true,
		desc:   "Charges an amount against an invoice. Each call charges again unless it repeats an idempotency_key.",
		params: []param{pInvoiceID, pAmount, pCurrency, pIdemKey, pAuthToken},
		output: paymentOutput, scope: "payments:write", run: (*Lab).chargePayment},
	{name: "charge_batch", server: "L02", title: "Charge batch", batch: "charges",
		desc: "Charges several invoices, in order. Each call charges every listed invoice again.",
		params: []param{{name: "charges", typ: "array", desc: "the charges to make", required: true, minItems: 1, maxItems: 20,
			items: []param{pInvoiceID, pAmount, pCurrency}}, pAuthToken},
		output: object(map[string]any{"payments": arrayOf(paymentOutput), "applied": integer}, "payments", "applied"),
		scope:  "payments:write", run: (*Lab).chargeBatch},
	{name: "refund_payment", server: "L02", title: "Refund payment",
		desc:   "Refunds part or all of a payment. Each call refunds again.",
		params: []param{{name: "payment_id", typ: "string", desc: "a payment id", required: true, maxLen: 32}, pAmount, pAuthToken},
		output: object(map[string]any{"id": str, "payment_id": str, "amount_cents": integer}, "id", "payment_id", "amount_cents"),
		scope:  "payments:write", run: (*Lab).refundPayment},

	// L03: files.
	{name: "read_file", server: "L03", title: "Read file", readOnly: true, idempotent: true,
		desc: "Returns a file's content and revision.", params: []param{pPath, pAuthToken},
		output: object(map[string]any{"path": str, "content": str, "revision": integer}, "path", "content", "revision"),
		scope:  "files:write", run: (*Lab).readFile},
	{name: "list_files", server: "L03", title: "List files", readOnly: true, idempotent: true,
		desc:   "Lists files, optionally under a prefix.",
		params: []param{{name: "prefix", typ: "string", desc: "a path prefix, e.g. /docs/", maxLen: 128}, pAuthToken},
		output: object(map[string]any{"files": arrayOf(fileOutput)}, "files"), scope: "files:write",
		run: (*Lab).listFiles},
	{name: "write_file", server: "L03", title: "Write file", destructive: true, idempotent: true,
		desc:   "Creates a file or replaces its content. With expected_revision, the write is refused if the file has changed since that revision.",
		params: []param{pPath, pContent, pRevision, pAuthToken},
		output: fileOutput, scope: "files:write", run: (*Lab).writeFile},
	{name: "append_file", server: "L03", title: "Append to file",
		desc:   "Appends one line to an existing file. Each call appends again.",
		params: []param{pPath, {name: "line", typ: "string", desc: "the line, without its newline", required: true, maxLen: 512}, pAuthToken},
		output: fileOutput, scope: "files:write", run: (*Lab).appendFile},
	{name: "delete_file", server: "L03", title: "Delete file", destructive: true, idempotent: true,
		desc: "Deletes a file; deleting a missing file does nothing.", params: []param{pPath, pAuthToken},
		output: object(map[string]any{"path": str, "deleted": boolean}, "path", "deleted"),
		scope:  "files:write", run: (*Lab).deleteFile},
	{name: "write_files", server: "L03", title: "Write files", destructive: true, idempotent: true, batch: "files",
		desc: "Creates or replaces several files, in order.",
		params: []param{{name: "files", typ: "array", desc: "the files to write", required: true, minItems: 1, maxItems: 20,
			items: []param{pPath, pContent}}, pAuthToken},
		output: object(map[string]any{"files": arrayOf(fileOutput), "applied": integer}, "files", "applied"),
		scope:  "files:write", run: (*Lab).writeFiles},
}

// toolsOf returns the tools server serves (every tool for "").
func toolsOf(server string) map[string]*tool {
	m := map[string]*tool{}
	for _, t := range tools {
		if server == "" || t.server == "*" || t.server == server {
			m[t.name] = t
		}
	}
	return m
}

// contractSchema is the JSON Schema of seed 002's error-category contract,
// the failure variant of every tool's outputSchema.
var contractSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"errorCategory": map[string]any{"type": "string", "enum": []string{"transient", "validation", "permission", "business"}},
		"isRetryable":   boolean,
		"explanation":   str,
		"nextAction":    str,
	},
	"required":             []string{"errorCategory", "isRetryable", "explanation"},
	"additionalProperties": false,
}

// mcpTool returns t's MCP definition. Its outputSchema admits the success
// shape and, for isError results, the error-category contract (seed 002:
// a failure object must not violate the declared schema).
func (t *tool) mcpTool() *mcp.Tool {
	f := false
	ann := &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, IdempotentHint: t.idempotent, OpenWorldHint: &f}
	if !t.readOnly {
		d := t.destructive
		ann.DestructiveHint = &d
	}
	return &mcp.Tool{
		Name:         t.name,
		Title:        t.title,
		Description:  t.desc,
		InputSchema:  schema(t.params),
		OutputSchema: map[string]any{"type": "object", "anyOf": []any{t.output, contractSchema}},
		Annotations:  ann,
	}
}

// Domain operations. The lab's lock is held.

// copyOf returns x as a success's structured content.
func copyOf[T any](x T) (any, *failure) { return &x, nil }

// upTo returns the first limit items (all when limit < 0): the items a
// batch applies.
func upTo(items []args, limit int) []args {
	if limit >= 0 && limit < len(items) {
		return items[:limit]
	}
	return items
}

func (l *Lab) authenticate(a args, _ int) (any, *failure) {
	tok := &Token{Token: "tok_" + l.hex(16), Scope: a.str("scope"), ExpiresAtMS: l.nowMS() + tokenLifetimeMS}
	l.st.Tokens[tok.Token] = tok
	l.effect("authenticate", "/tokens/"+tok.Token)
	return tok, nil
}

// tokenLifetimeMS is how long a token from authenticate is valid, in
// lab-clock milliseconds (15 minutes).
const tokenLifetimeMS = 15 * 60 * 1000

func (l *Lab) order(id string) (*Order, *failure) {
	o, ok := l.st.Orders[id]
	if !ok {
		return nil, valueFail("/order_id", "no order %s", quoteValue(id))
	}
	return o, nil
}

func (l *Lab) getOrder(a args, _ int) (any, *failure) {
	o, f := l.order(a.str("order_id"))
	if f != nil {
		return nil, f
	}
	return copyOf(*o)
}

func (l *Lab) listOrders(a args, _ int) (any, *failure) {
	out := []Order{}
	for _, id := range slices.Sorted(maps.Keys(l.st.Orders)) {
		if o := l.st.Orders[id]; !a.has("customer") || o.Customer == a.str("customer") {
			out = append(out, *o)
		}
	}
	return map[string]any{"orders": out}, nil
}

func (l *Lab) getStock(a args, _ int) (any, *failure) {
	n, ok := l.st.Stock[a.str("sku")]
	if !ok {
		return nil, valueFail("/sku", "no product %s", quoteValue(a.str("sku")))
	}
	return map[string]any{"sku": a.str("sku"), "available": n}, nil
}

func (l *Lab) createOrder(a args, _ int) (any, *failure) {
	if key := a.str("idempotency_key"); key != "" {
		for _, id := range slices.Sorted(maps.Keys(l.st.Orders)) {
			if o := l.st.Orders[id]; o.IdempotencyKey == key {
				return copyOf(*o)
			}
		}
	}
	sku := a.str("sku")
	avail, ok := l.st.Stock[sku]
	if !ok {
		return nil, valueFail("/sku", "no product %s", quoteValue(sku))
	}
	q := a.num("quantity")
	if q > avail {
		return nil, businessFail("only %d units of %s are in stock, %d were ordered", avail, sku, q)
	}
	id := fmt.Sprintf("O-%d", 1001+len(l.st.Orders))
	o := &Order{ID: id, Customer: a.str("customer"), SKU: sku, Quantity: q, Note: a.str("note"), Status: "open", Revision: 1,
		IdempotencyKey: a.str("idempotency_key")}
	l.st.Orders[id] = o
	l.effect("create_order", "/orders/"+id)
	return copyOf(*o)
}

func (l *Lab) updateOrder(a args, _ int) (any, *failure) {
	o, f := l.order(a.str("order_id"))
	if f != nil {
		return nil, f
	}
	if o.Status != "open" {
		return nil, businessFail("order %s is %s and cannot be changed", o.ID, o.Status)
	}
	if a.has("expected_revision") && a.num("expected_revision") != o.Revision {
		return nil, staleFail("/expected_revision", "order %s is at revision %d, not %d: it changed since it was read", o.ID, o.Revision, a.num("expected_revision"))
	}
	if !a.has("quantity") && !a.has("note") {
		return nil, typeFail("", "give quantity, note or both")
	}
	if (!a.has("quantity") || a.num("quantity") == o.Quantity) && (!a.has("note") || a.str("note") == o.Note) {
		return copyOf(*o) // Note: a change to what is there changes nothing, so a replay is idempotent.
	}
	if a.has("quantity") {
		o.Quantity = a.num("quantity")
	}
	if a.has("note") {
		o.Note = a.str("note")
	}
	o.Revision++
	l.effect("update_order", "/orders/"+o.ID)
	return copyOf(*o)
}

func (l *Lab) cancelOrder(a args, _ int) (any, *failure) {
	o, f := l.order(a.str("order_id"))
	if f != nil {
		return nil, f
	}
	if o.Status != "cancelled" {
		o.Status = "cancelled"
		o.Revision++
		l.effect("cancel_order", "/orders/"+o.ID)
	}
	return copyOf(*o)
}

func (l *Lab) shipOrders(a args, limit int) (any, *failure) {
	items := a.list("shipments")
	for i, it := range items {
		o, ok := l.st.Orders[it.str("order_id")]
		if !ok {
			return nil, valueFail(fmt.Sprintf("/shipments/%d/order_id", i), "no order %s", quoteValue(it.str("order_id")))
		}
		if o.Status != "open" {
			return nil, businessFail("order %s is %s and cannot be shipped", o.ID, o.Status)
		}
	}
	out := []Shipment{}
	for _, it := range upTo(items, limit) {
		s := &Shipment{ID: "shp_" + l.hex(8), OrderID: it.str("order_id")}
		l.st.Shipments = append(l.st.Shipments, s)
		l.effect("ship_orders", fmt.Sprintf("/shipments/%d", len(l.st.Shipments)-1))
		out = append(out, *s)
	}
	return map[string]any{"shipments": out, "applied": len(out)}, nil
}

func (l *Lab) invoice(id, ptr string) (*Invoice, *failure) {
	inv, ok := l.st.Invoices[id]
	if !ok {
		return nil, valueFail(ptr, "no invoice %s", quoteValue(id))
	}
	return inv, nil
}

func (l *Lab) getInvoice(a args, _ int) (any, *failure) {
	inv, f := l.invoice(a.str("invoice_id"), "/invoice_id")
	if f != nil {
		return nil, f
	}
	var paid int64
	for _, p := range l.st.Payments {
		if p.InvoiceID == inv.ID {
			paid += p.AmountCents
		}
	}
	for _, r := range l.st.Refunds {
		for _, p := range l.st.Payments {
			if p.ID == r.PaymentID && p.InvoiceID == inv.ID {
				paid -= r.AmountCents
			}
		}
	}
	return map[string]any{"id": inv.ID, "customer": inv.Customer, "amount_due_cents": inv.AmountDueCents, "currency": inv.Currency, "paid_cents": paid}, nil
}

func (l *Lab) listPayments(a args, _ int) (any, *failure) {
	out := []Payment{}
	for _, p := range l.st.Payments {
		if !a.has("invoice_id") || p.InvoiceID == a.str("invoice_id") {
			out = append(out, *p)
		}
	}
	return map[string]any{"payments": out}, nil
}

// checkCharge checks one charge; at is the pointer of its object.
func (l *Lab) checkCharge(a args, at string) *failure {
	inv, f := l.invoice(a.str("invoice_id"), at+"/invoice_id")
	if f != nil {
		return f
	}
	if a.str("currency") != inv.Currency {
		return valueFail(at+"/currency", "invoice %s is billed in %s, not %s", inv.ID, inv.Currency, a.str("currency"))
	}
	return nil
}

func (l *Lab) charge(tool string, a args) *Payment {
	p := &Payment{ID: "pay_" + l.hex(8), InvoiceID: a.str("invoice_id"), AmountCents: a.num("amount_cents"),
		Currency: a.str("currency"), IdempotencyKey: a.str("idempotency_key")}
	l.st.Payments = append(l.st.Payments, p)
	l.effect(tool, fmt.Sprintf("/payments/%d", len(l.st.Payments)-1))
	return p
}

func (l *Lab) chargePayment(a args, _ int) (any, *failure) {
	if key := a.str("idempotency_key"); key != "" {
		for _, p := range l.st.Payments {
			if p.IdempotencyKey == key {
				return copyOf(*p)
			}
		}
	}
	if f := l.checkCharge(a, ""); f != nil {
		return nil, f
	}
	return copyOf(*l.charge("charge_payment", a))
}

func (l *Lab) chargeBatch(a args, limit int) (any, *failure) {
	items := a.list("charges")
	for i, it := range items {
		if f := l.checkCharge(it, fmt.Sprintf("/charges/%d", i)); f != nil {
			return nil, f
		}
	}
	out := []Payment{}
	for _, it := range upTo(items, limit) {
		out = append(out, *l.charge("charge_batch", it))
	}
	return map[string]any{"payments": out, "applied": len(out)}, nil
}

func (l *Lab) refundPayment(a args, _ int) (any, *failure) {
	var pay *Payment
	for _, p := range l.st.Payments {
		if p.ID == a.str("payment_id") {
			pay = p
		}
	}
	if pay == nil {
		return nil, valueFail("/payment_id", "no payment %s", quoteValue(a.str("payment_id")))
	}
	left := pay.AmountCents
	for _, r := range l.st.Refunds {
		if r.PaymentID == pay.ID {
			left -= r.AmountCents
		}
	}
	if a.num("amount_cents") > left {
		return nil, businessFail("payment %s has %d cents left to refund, %d were asked", pay.ID, left, a.num("amount_cents"))
	}
	r := &Refund{ID: "ref_" + l.hex(8), PaymentID: pay.ID, AmountCents: a.num("amount_cents")}
	l.st.Refunds = append(l.st.Refunds, r)
	l.effect("refund_payment", fmt.Sprintf("/refunds/%d", len(l.st.Refunds)-1))
	return copyOf(*r)
}

// checkPath checks a file path; ptr is its pointer.
func checkPath(p, ptr string) *failure {
	if !strings.HasPrefix(p, "/") || strings.Contains(p, "//") || strings.HasSuffix(p, "/") {
		return valueFail(ptr, "path %s must be absolute, with no empty part and no trailing slash", quoteValue(p))
	}
	for _, part := range strings.Split(p[1:], "/") {
		if part == "." || part == ".." {
			return valueFail(ptr, "path %s must not contain . or ..", quoteValue(p))
		}
	}
	return nil
}

func (l *Lab) file(p string) (*File, *failure) {
	if f := checkPath(p, "/path"); f != nil {
		return nil, f
	}
	file, ok := l.st.Files[p]
	if !ok {
		return nil, valueFail("/path", "no file %s", quoteValue(p))
	}
	return file, nil
}

func (l *Lab) readFile(a args, _ int) (any, *failure) {
	f, fail := l.file(a.str("path"))
	if fail != nil {
		return nil, fail
	}
	return map[string]any{"path": f.Path, "content": f.Content, "revision": f.Revision}, nil
}

func fileInfo(f *File) map[string]any {
	return map[string]any{"path": f.Path, "revision": f.Revision, "size": len(f.Content)}
}

func (l *Lab) listFiles(a args, _ int) (any, *failure) {
	out := []map[string]any{}
	for _, p := range slices.Sorted(maps.Keys(l.st.Files)) {
		if strings.HasPrefix(p, a.str("prefix")) {
			out = append(out, fileInfo(l.st.Files[p]))
		}
	}
	return map[string]any{"files": out}, nil
}

// put creates or replaces a file. Note: an identical write changes
// nothing, so a replay is idempotent.
func (l *Lab) put(tool, p, content string) *File {
	f, ok := l.st.Files[p]
	if ok && f.Content == content {
		return f
	}
	if !ok {
		f = &File{Path: p}
		l.st.Files[p] = f
	}
	f.Content = content
	f.Revision++
	l.effect(tool, "/files/"+statediff.EscapePointer(p))
	return f
}

func (l *Lab) writeFile(a args, _ int) (any, *failure) {
	p := a.str("path")
	if f := checkPath(p, "/path"); f != nil {
		return nil, f
	}
	if a.has("expected_revision") {
		var cur int64
		if f, ok := l.st.Files[p]; ok {
			cur = f.Revision
		}
		if cur != a.num("expected_revision") {
			return nil, staleFail("/expected_revision", "file %s is at revision %d, not %d: it changed since it was read", p, cur, a.num("expected_revision"))
		}
	}
	return fileInfo(l.put("write_file", p, a.str("content"))), nil
}

func (l *Lab) appendFile(a args, _ int) (any, *failure) {
	f, fail := l.file(a.str("path"))
	if fail != nil {
		return nil, fail
	}
	if strings.ContainsAny(a.str("line"), "\r\n") {
		return nil, valueFail("/line", "line must not contain a line break")
	}
	return fileInfo(l.put("append_file", f.Path, f.Content+a.str("line")+"\n")), nil
}

func (l *Lab) deleteFile(a args, _ int) (any, *failure) {
	p := a.str("path")
	if f := checkPath(p, "/path"); f != nil {
		return nil, f
	}
	_, ok := l.st.Files[p]
	if ok {
		delete(l.st.Files, p)
		l.effect("delete_file", "/files/"+statediff.EscapePointer(p))
	}
	return map[string]any{"path": p, "deleted": ok}, nil
}

func (l *Lab) writeFiles(a args, limit int) (any, *failure) {
	items := a.list("files")
	for i, it := range items {
		if f := checkPath(it.str("path"), fmt.Sprintf("/files/%d/path", i)); f != nil {
			return nil, f
		}
	}
	out := []map[string]any{}
	for _, it := range upTo(items, limit) {
		out = append(out, fileInfo(l.put("write_files", it.str("path"), it.str("content"))))
	}
	return map[string]any{"files": out, "applied": len(out)}, nil
}
