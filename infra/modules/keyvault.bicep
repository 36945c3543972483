// Optional Key Vault for SAS connection strings of namespaces outside the Function's tenant
// (topology: keyVaultSecret). Secrets are added by the operator; the Function's identity may only
// read them (Key Vault Secrets User), through RBAC, never access policies.
param name string
param location string
param principalId string

@description('Resource id of the Log Analytics workspace that receives the resource logs and metrics.')
param logAnalyticsWorkspaceId string

var keyVaultSecretsUser = '4633458b-17de-408a-b874-0445c86b69e6'

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: name
  location: location
  properties: {
    tenantId: subscription().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    enablePurgeProtection: true
  }
}

resource secretsUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: vault
  name: guid(vault.id, principalId, keyVaultSecretsUser)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUser)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

// Who read which secret (AuditEvent), to the deployment's Log Analytics workspace: the vault
// holds other tenants' SAS connection strings (infra/README.md, "Diagnostics").
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: vault
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logs: [
      {
        category: 'AuditEvent'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

output name string = vault.name
