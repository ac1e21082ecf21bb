# oi-tui kernel driver for PowerShell 7 (pwsh).
#
# Reads one command a line from the control FIFO named by the first argument:
# "BLOCK NONCE PATH". Dot-sources the code in PATH into this session, so that variables,
# functions and the location persist, then writes the end marker
# ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL to the terminal. Code never passes through stdin.
param([string]$Fifo)
$ErrorActionPreference = 'Continue'
[Console]::TreatControlCAsInput = $false
$oiControl = [System.IO.StreamReader]::new($Fifo)
try {
    $oiMarker = [System.IO.File]::OpenWrite('/dev/tty')
} catch {
    $oiMarker = [Console]::OpenStandardOutput()
}
while ($null -ne ($oiLine = $oiControl.ReadLine())) {
    $oiParts = $oiLine.Split(' ', 3)
    if ($oiParts.Count -lt 3) { continue }
    $oiStatus = 0
    $global:LASTEXITCODE = 0
    try {
        $Error.Clear()
        . $oiParts[2]
        if (-not $?) { $oiStatus = 1 }
        if ($global:LASTEXITCODE -ne 0) { $oiStatus = $global:LASTEXITCODE }
    } catch {
        $_ | Out-String | Write-Host -NoNewline
        if ($_.ScriptStackTrace) { Write-Host $_.ScriptStackTrace }
        $oiStatus = 1
    }
    [Console]::Out.Flush()
    $oiBytes = [System.Text.Encoding]::UTF8.GetBytes("$([char]27)]5379;$($oiParts[1]);$($oiParts[0]);$oiStatus$([char]7)")
    $oiMarker.Write($oiBytes, 0, $oiBytes.Length)
    $oiMarker.Flush()
}
