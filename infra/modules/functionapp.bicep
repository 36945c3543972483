// The replication Function app on the Flex Consumption plan (FC1, Linux, Python 3.13 by
// default) with a managed identity (the app's system-assigned one, or a user-assigned one when
// userAssignedIdentityName is set), deployment storage and AzureWebJobsStorage reached by that
// identity (no account keys), Application Insights with Entra auth, and the replication app
// settings rendered from the topology. infra/README.md cites the docs behind each setting.
param name string
param location string

@description('Replication app settings (REPLICATION_TOPOLOGY, <connection>__fullyQualifiedNamespace, <connection>__credential...).')
param replicationAppSettings object

@description('Settings a user-assigned identity adds (<connection>__clientId), with the client id written as {identityClientId}.')
param userAssignedIdentitySettings object = {}

@description('Key Vault name substituted into Key Vault references, empty when none.')
param keyVaultName string = ''

@description('User-assigned managed identity to create (or reuse) in this resource group and run the app as; empty: the app\'s system-assigned identity.')
param userAssignedIdentityName string = ''

// Python versions Azure Functions supports (Supported languages in Azure Functions); Python 3.12
// is the last one added to Linux Consumption, newer ones only reach Flex Consumption. 3.10 is
// left out: its support ends in October 2026.
@description('Python version of the Flex Consumption runtime.')
@allowed([
  '3.11'
  '3.12'
  '3.13'
])
param pythonVersion string = '3.13'

@description('Spread the plan and the app\'s storage over availability zones (plan zoneRedundant, storage Standard_ZRS) where the region has them.')
param zoneRedundant bool = false

param maximumInstanceCount int = 40
param instanceMemoryMB int = 2048

var storageName = take('st${uniqueString(resourceGroup().id, name)}', 24)
var deploymentContainer = 'app-package-${take(uniqueString(name), 8)}'
// AzureWebJobsStorage needs Storage Blob Data Owner: the host's minimum (locks, keys, the
// deployment package) and where Event Hubs triggers keep their checkpoints; plus Storage Table
// Data Contributor for the host's diagnostic events. No queue role: neither blob triggers nor
// Durable Functions are used ("Configure connections to remote services in Azure Functions").
var storageBlobDataOwner = 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
var storageTableDataContributor = '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
var monitoringMetricsPublisher = '3913510d-42f4-4e42-8a64-420c390055eb'

var useUserAssignedIdentity = !empty(userAssignedIdentityName)
var userAssignedIdentityId = resourceId('Microsoft.ManagedIdentity/userAssignedIdentities', userAssignedIdentityName)

resource userIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' = if (useUserAssignedIdentity) {
  name: userAssignedIdentityName
  location: location
}

var identityClientId = useUserAssignedIdentity ? userIdentity.properties.clientId : ''

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: storageName
  location: location
  kind: 'StorageV2'
  sku: {
    name: zoneRedundant ? 'Standard_ZRS' : 'Standard_LRS'
  }
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: storage
  name: 'default'
}

resource container 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainer
}

resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-${name}'
  location: location
  properties: {
    retentionInDays: 30
  }
}

resource insights 'Microsoft.Insights/components@2020-02-02' = {
  name: 'appi-${name}'
  location: location
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: logs.id
    DisableLocalAuth: true
  }
}

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: 'plan-${name}'
  location: location
  kind: 'functionapp'
  sku: {
    name: 'FC1'
    tier: 'FlexConsumption'
  }
  properties: {
    reserved: true
    zoneRedundant: zoneRedundant
  }
}

// Host storage and Application Insights by identity; a user-assigned identity is named by its
// client id in both ("Configure connections to remote services in Azure Functions").
var platformSettings = union({
  AzureWebJobsStorage__accountName: storage.name
  AzureWebJobsStorage__credential: 'managedidentity'
  APPLICATIONINSIGHTS_CONNECTION_STRING: insights.properties.ConnectionString
  APPLICATIONINSIGHTS_AUTHENTICATION_STRING: useUserAssignedIdentity ? 'ClientId=${identityClientId};Authorization=AAD' : 'Authorization=AAD'
}, useUserAssignedIdentity ? {
  AzureWebJobsStorage__clientId: identityClientId
} : {})

// Key Vault references carry the vault name, and a user-assigned identity's settings its client
// id, both known only at deployment.
var replicationSettings = empty(keyVaultName) ? replicationAppSettings : json(replace(string(replicationAppSettings), '{keyVaultName}', keyVaultName))
var identitySettings = useUserAssignedIdentity ? json(replace(string(userAssignedIdentitySettings), '{identityClientId}', identityClientId)) : {}

resource app 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  kind: 'functionapp,linux'
  identity: useUserAssignedIdentity ? {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${userAssignedIdentityId}': {}
    }
  } : {
    type: 'SystemAssigned'
  }
  tags: {
    'azd-service-name': 'replication'
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    // Key Vault references resolve with the system-assigned identity unless told otherwise
    // ("Use Key Vault references as app settings").
    keyVaultReferenceIdentity: useUserAssignedIdentity ? userAssignedIdentityId : 'SystemAssigned'
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${storage.properties.primaryEndpoints.blob}${deploymentContainer}'
          authentication: useUserAssignedIdentity ? {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: userAssignedIdentityId
          } : {
            type: 'SystemAssignedIdentity'
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
      }
      runtime: {
        name: 'python'
        version: pythonVersion
      }
    }
    siteConfig: {
      minTlsVersion: '1.2'
      // Deployments go to the blob container above; nothing is uploaded over FTP(S).
      ftpsState: 'Disabled'
    }
  }
  dependsOn: [
    container
    userIdentity
  ]
}

var principalId = useUserAssignedIdentity ? userIdentity.properties.principalId : app.identity.principalId

// The role assignments below are named as before for the system-assigned identity; a
// user-assigned identity gets names of its own, because an assignment's principal can't change.

resource appSettings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: app
  name: 'appsettings'
  properties: union(platformSettings, replicationSettings, identitySettings)
}

resource blobOwner 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: useUserAssignedIdentity ? guid(storage.id, app.id, userAssignedIdentityName, storageBlobDataOwner) : guid(storage.id, app.id, storageBlobDataOwner)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataOwner)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource tableContributor 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: storage
  name: useUserAssignedIdentity ? guid(storage.id, app.id, userAssignedIdentityName, storageTableDataContributor) : guid(storage.id, app.id, storageTableDataContributor)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageTableDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

resource metricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: insights
  name: useUserAssignedIdentity ? guid(insights.id, app.id, userAssignedIdentityName, monitoringMetricsPublisher) : guid(insights.id, app.id, monitoringMetricsPublisher)
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisher)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}


// The app's own logs (FunctionAppLogs) and metrics to the workspace behind Application Insights.
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: app
  properties: {
    workspaceId: logs.id
    logs: [
      {
        category: 'FunctionAppLogs'
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

output name string = app.name
output principalId string = principalId
output insightsId string = insights.id
output logAnalyticsWorkspaceId string = logs.id
