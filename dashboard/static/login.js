"use strict";
// Says why the last login failed (?error=code|token).
(function () {
  const why = new URLSearchParams(location.search).get("error");
  const messages = {
    code: "That login URL was already used or is not this server's. Run `batchlet dashboard` for a new one, or use the token below.",
    token: "That is not the admin token.",
  };
  if (why && messages[why]) {
    const p = document.getElementById("login-error");
    p.textContent = messages[why];
    p.hidden = false;
  }
})();
