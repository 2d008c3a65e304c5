// Shows where the gateway listens, from what the shell set before this script ran.
const shell = window.__TRIMGATE__;
const line = document.getElementById('listen');
if (shell && typeof shell.apiBase === 'string') {
  line.textContent = `The gateway listens on ${shell.apiBase}`;
  line.dataset.apiBase = shell.apiBase;
}
