"use strict";
// A JavaScript server built by hand (not in dist/).
function toolError(text) {
  const res = { content: [{ type: "text", text }] };
  res["isError"] = true;
  return res;
}

const unknownTool = (name) => ({ "isError": true, content: [{ type: "text", text: `unknown ${name}` }] });

module.exports = { toolError, unknownTool, ok: { isError: !1 } };
