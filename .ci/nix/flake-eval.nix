# Offline structural check of ../../flake.nix with mocked inputs (Nix 2.8 cannot fetch or
# evaluate real nixpkgs here). Run: nix-instantiate --eval --strict .ci/nix/flake-eval.nix
let
  flake = import ../../flake.nix;
  mockPkgs = import ./mock-nixpkgs.nix;
  drv = name: { type = "derivation"; inherit name; outPath = "/nix/store/00000000000000000000000000000000-${name}"; };
  crane = {
    mkLib = pkgs: {
      buildDepsOnly = a: assert a.cargoExtraArgs == "--locked -p wt-memory"; drv "${a.pname}-deps";
      buildPackage = a: assert a ? cargoArtifacts && a.doCheck == false; drv "${a.pname}-${a.version}";
      cargoClippy = a: drv "clippy";
      cargoFmt = a: drv "fmt";
      devShell = a: assert a ? checks; drv "shell" // { inherit (a) packages SHODH_PACKAGE_DIR; };
    };
  };
  flake-utils.lib.eachSystem = systems: f:
    let
      per = map (s: { name = s; value = f s; }) systems;
      outNames = builtins.attrNames (builtins.head per).value;
    in builtins.listToAttrs (map (o: {
      name = o;
      value = builtins.listToAttrs (map (p: { inherit (p) name; value = p.value.${o}; }) per);
    }) outNames);
  nixpkgs = { outPath = ./mock-nixpkgs.nix; };
  out = flake.outputs { self = out; inherit nixpkgs crane flake-utils; };
  sys = "x86_64-linux";
  app = a: assert a.type == "app" && a.meta ? description; a.program;
  result = {
    packages = builtins.attrNames out.packages.${sys};
    apps = builtins.mapAttrs (n: a: app a) out.apps.${sys};
    dockerCmd = out.packages.${sys}.dockerImage.config.Cmd;
    checks = builtins.attrNames out.checks.${sys};
    devShell = out.devShells.${sys}.default.name;
    wheel = out.packages.${sys}.shodh-wheel.name;
  };
  has = re: s: builtins.match re s != null;
in
assert builtins.attrNames flake.inputs == [ "crane" "flake-utils" "nixpkgs" ];
assert builtins.all (p: builtins.elem p result.packages) [ "default" "dockerImage" "shodhAssets" "claude-code" ];
assert has ".*/bin/wt-project init .*" result.apps.init;
assert has ".*/bin/wt-mcp-server .*" result.apps.mcp;
assert result.dockerCmd == [ "/bin/wt-mcp-server" ];
assert builtins.all (c: builtins.elem c result.checks) [ "build" "clippy" "fmt" ];
result
