//! The JavaScript sandboxd runs in pages (as BrowserGym does through Playwright).

/// Gives every element without a bid (or with a bid already seen: a cloned node) the next one,
/// as BrowserGym's `frame_mark_elements.js` does, in the document and its open shadow roots;
/// a bid stays on its element for the page's life, so bids are stable across observations.
/// Answers the focused element's bid (or `""`).
pub(crate) const MARK_ELEMENTS: &str = r#"(() => {
  if (window.__sandboxdNextBid === undefined) window.__sandboxdNextBid = 0;
  const seen = new Set();
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      let bid = el.getAttribute('bid');
      if (bid === null || seen.has(bid)) {
        bid = String(window.__sandboxdNextBid++);
        el.setAttribute('bid', bid);
      }
      seen.add(bid);
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  let active = document.activeElement;
  while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
  return active ? (active.getAttribute('bid') || '') : '';
})()"#;

/// An expression that finds the element with bid `BID` (a JSON string put in place of
/// `__BID__`), in the document or an open shadow root, or `null`.
pub(crate) const FIND_ELEMENT: &str = r#"((bid) => {
  const find = (root) => {
    const el = root.querySelector('[bid="' + CSS.escape(bid) + '"]');
    if (el) return el;
    for (const host of root.querySelectorAll('*')) {
      if (host.shadowRoot) { const f = find(host.shadowRoot); if (f) return f; }
    }
    return null;
  };
  return find(document);
})(__BID__)"#;

/// Scrolls the element into view if needed and answers `[x, y, width, height]` of its centre.
pub(crate) const CENTER: &str = r#"function() {
  if (this.scrollIntoViewIfNeeded) this.scrollIntoViewIfNeeded(true); else this.scrollIntoView({block: 'center'});
  const r = this.getBoundingClientRect();
  return [r.left + r.width / 2, r.top + r.height / 2, r.width, r.height];
}"#;

/// Prepares a fill: focuses the element and selects its content; answers an error text, or
/// `null` when the text may now be typed.
pub(crate) const PREPARE_FILL: &str = r#"function(value) {
  const tag = this.tagName;
  const type = (this.getAttribute('type') || 'text').toLowerCase();
  if (!(tag === 'INPUT' || tag === 'TEXTAREA' || this.isContentEditable))
    return 'Error: Element is not an <input>, <textarea> or [contenteditable] element';
  if (tag === 'INPUT' && ['checkbox', 'radio', 'file', 'submit', 'button', 'image', 'reset'].includes(type))
    return 'Error: Input of type "' + type + '" cannot be filled';
  if (this.disabled || this.readOnly) return 'Error: Element is not editable';
  this.focus();
  if (tag === 'INPUT' && ['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range', 'number'].includes(type)) {
    this.value = value;
    this.dispatchEvent(new Event('input', {bubbles: true}));
    this.dispatchEvent(new Event('change', {bubbles: true}));
    return '';
  }
  if (tag === 'INPUT' || tag === 'TEXTAREA') {
    this.select();
  } else {
    const range = document.createRange();
    range.selectNodeContents(this);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  if (value === '') { document.execCommand('delete'); return ''; }
  return null;
}"#;

/// Selects the options (values or labels) of a `<select>`; answers an error text or `""`.
pub(crate) const SELECT_OPTION: &str = r#"function(wanted) {
  if (this.tagName !== 'SELECT') return 'Error: Element is not a <select> element';
  const options = Array.from(this.options);
  const picked = [];
  for (const w of wanted) {
    const o = options.find(o => o.value === w || o.label === w || o.textContent.trim() === w);
    if (!o) return 'Error: No option matches ' + JSON.stringify(w);
    picked.push(o);
  }
  if (!this.multiple && picked.length > 1) return 'Error: Element is not a <select multiple> element';
  for (const o of options) o.selected = picked.includes(o);
  this.dispatchEvent(new Event('input', {bubbles: true}));
  this.dispatchEvent(new Event('change', {bubbles: true}));
  return '';
}"#;

/// Focuses the element.
pub(crate) const FOCUS: &str = "function() { this.focus(); }";

/// Whether the element is an `<input type=file>`.
pub(crate) const IS_FILE_INPUT: &str =
    "function() { return this.tagName === 'INPUT' && this.type === 'file'; }";

/// Draws a numbered box over each element whose bid is in the list (those in the viewport),
/// for the set-of-marks screenshot; [`REMOVE_MARKS`] takes them away.
pub(crate) const DRAW_MARKS: &str = r#"((bids) => {
  const layer = document.createElement('div');
  layer.id = '__sandboxd_marks';
  layer.style.cssText = 'position:fixed;left:0;top:0;width:0;height:0;z-index:2147483647;pointer-events:none';
  const W = window.innerWidth, H = window.innerHeight;
  for (const bid of bids) {
    const el = document.querySelector('[bid="' + CSS.escape(bid) + '"]');
    if (!el) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || r.right < 0 || r.bottom < 0 || r.left > W || r.top > H) continue;
    const box = document.createElement('div');
    box.style.cssText = 'position:fixed;box-sizing:border-box;border:2px solid #e6194b;left:' + r.left + 'px;top:' + r.top + 'px;width:' + r.width + 'px;height:' + r.height + 'px';
    const label = document.createElement('div');
    label.textContent = bid;
    label.style.cssText = 'position:absolute;left:-2px;top:-16px;font:bold 11px monospace;line-height:14px;padding:0 2px;color:#fff;background:#e6194b';
    box.appendChild(label);
    layer.appendChild(box);
  }
  document.documentElement.appendChild(layer);
})(__BIDS__)"#;

/// Removes what [`DRAW_MARKS`] drew.
pub(crate) const REMOVE_MARKS: &str =
    "(() => { const l = document.getElementById('__sandboxd_marks'); if (l) l.remove(); })()";
