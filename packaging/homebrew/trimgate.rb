# Homebrew formula for the `trimgate` command, from the release's CLI tarballs.
#: The template: scripts/homebrew.py fills in the version, the repository and each file's
#: checksum from the release's SHA256SUMS, and writes Formula/trimgate.rb for the tap
#: (without these #: lines).
class Trimgate < Formula
  desc "Local LLM gateway that makes coding agents cheaper and faster"
  homepage "https://github.com/{{repo}}"
  version "{{version}}"
  license "Apache-2.0"

  on_macos do
    on_arm do
      url "https://github.com/{{repo}}/releases/download/v{{version}}/trimgate-{{version}}-aarch64-apple-darwin.tar.gz"
      sha256 "{{sha256 trimgate-{{version}}-aarch64-apple-darwin.tar.gz}}"
    end
    on_intel do
      url "https://github.com/{{repo}}/releases/download/v{{version}}/trimgate-{{version}}-x86_64-apple-darwin.tar.gz"
      sha256 "{{sha256 trimgate-{{version}}-x86_64-apple-darwin.tar.gz}}"
    end
  end

  on_linux do
    on_arm do
      url "https://github.com/{{repo}}/releases/download/v{{version}}/trimgate-{{version}}-aarch64-unknown-linux-gnu.tar.gz"
      sha256 "{{sha256 trimgate-{{version}}-aarch64-unknown-linux-gnu.tar.gz}}"
    end
    on_intel do
      url "https://github.com/{{repo}}/releases/download/v{{version}}/trimgate-{{version}}-x86_64-unknown-linux-gnu.tar.gz"
      sha256 "{{sha256 trimgate-{{version}}-x86_64-unknown-linux-gnu.tar.gz}}"
    end
  end

  def install
    bin.install "trimgate"
  end

  test do
    assert_match "trimgate #{version}", shell_output("#{bin}/trimgate --version")
  end
end
