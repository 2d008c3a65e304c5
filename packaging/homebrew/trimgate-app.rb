# Homebrew cask for the desktop app, from the release's .dmg files. Its token is
# trimgate-app so that `brew install trimgate` stays the formula (the command).
#: The template: scripts/homebrew.py fills in the version, the repository and each file's
#: checksum from the release's SHA256SUMS, and writes Casks/trimgate-app.rb for the tap
#: (without these #: lines).
cask "trimgate-app" do
  arch arm: "aarch64", intel: "x64"

  version "{{version}}"
  sha256 arm:   "{{sha256 Trimgate_{{version}}_aarch64.dmg}}",
         intel: "{{sha256 Trimgate_{{version}}_x64.dmg}}"

  url "https://github.com/{{repo}}/releases/download/v#{version}/Trimgate_#{version}_#{arch}.dmg"
  name "Trimgate"
  desc "Local LLM gateway that makes coding agents cheaper and faster"
  homepage "https://github.com/{{repo}}"

  livecheck do
    url :url
    strategy :github_latest
  end

  # The app updates itself (tauri-plugin-updater, signed updates from the release).
  auto_updates true
  # tauri.conf.json: bundle.macOS.minimumSystemVersion.
  depends_on macos: ">= :big_sur"

  app "Trimgate.app"

  uninstall quit: "dev.trimgate.desktop"

  # What the app leaves in the user's Library. gateway-core keeps the config, the ledger,
  # gateway.json and the admin token under ProjectDirs("dev", "trimgate", "trimgate");
  # the shell (bundle id dev.trimgate.desktop) has its webview's data, caches and window
  # state; the log file is in ~/Library/Logs/Trimgate; start-at-login is a LaunchAgent named
  # after the product. Provider keys stay in the login keychain (service "trimgate"): zap
  # does not remove keychain items.
  zap trash: [
    "~/Library/Application Support/dev.trimgate.desktop",
    "~/Library/Application Support/dev.trimgate.trimgate",
    "~/Library/Caches/dev.trimgate.desktop",
    "~/Library/HTTPStorages/dev.trimgate.desktop",
    "~/Library/LaunchAgents/Trimgate.plist",
    "~/Library/Logs/Trimgate",
    "~/Library/Preferences/dev.trimgate.desktop.plist",
    "~/Library/Saved Application State/dev.trimgate.desktop.savedState",
    "~/Library/WebKit/dev.trimgate.desktop",
  ]
end
