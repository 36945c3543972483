// Replication topology and Function app, for one resource group.
//
// Parameters come from infra/main.parameters.json, rendered from the topology file:
//     python -m replication render bicep-params --topology topology.json --output infra/main.parameters.json
// We render parameters instead of reading the topology with loadJsonContent because the
// replication subscriptions, their loop-prevention rules, consumer groups and least-privilege role
// assignments are derived from the tasks by the replication library; rendering keeps a single
// implementation of those rules (shared with the emulator config and the az CLI script) and
// keeps this template to flat loops.
targetScope = 'resourceGroup'

@description('Service Bus namespaces with their queues, topics, subscriptions and rules.')
param serviceBusNamespaces array = []

@description('Event Hubs namespaces with their event hubs and consumer groups.')
param eventHubNamespaces array = []

@description('Roles of the Function app, one entity each: Data Receiver / Data Sender on messaging entities, Storage Blob Data Contributor on Service Bus capture containers.')
param roleAssignments array = []

@description('Replication app settings rendered from the topology.')
param replicationAppSettings object

@description('Settings a user-assigned identity adds (<connection>__clientId), rendered from the topology with the client id as {identityClientId}.')
param userAssignedIdentitySettings object = {}

@description('User-assigned managed identity to create (or reuse) in this resource group and run the Function app as; empty (default): the app\'s system-assigned identity.')
param userAssignedIdentityName string = ''

@description('Python version of the Function app (Flex Consumption).')
@allowed([
  '3.11'
  '3.12'
  '3.13'
])
param pythonVersion string = '3.13'

@description('Create a Key Vault for connection strings of namespaces outside the tenant.')
param enableKeyVault bool = false

@description('Alert thresholds from the topology\'s monitoring section (lagThresholdSeconds, heartbeatMaxAgeSeconds, parkedThreshold, failureWindow, alertsEnabled, actionGroupEmails).')
param monitoring object = {
  lagThresholdSeconds: 300
  heartbeatMaxAgeSeconds: 600
  parkedThreshold: 0
  failureWindow: 'PT15M'
  alertsEnabled: true
  actionGroupEmails: []
}

@description('Resource id of an existing action group the alerts notify; empty: only the topology\'s actionGroupEmails (if any).')
param actionGroupId string = ''

@description('Spread the Function app\'s plan and storage over availability zones (the region must have them).')
param zoneRedundant bool = false

@description('Azure region of the Function app.')
param location string = resourceGroup().location

@description('Name of the Function app.')
param functionAppName string = 'repl-${uniqueString(resourceGroup().id)}'

var keyVaultName = enableKeyVault ? take('kv-${uniqueString(resourceGroup().id)}', 24) : ''

module serviceBus 'modules/servicebus.bicep' = [for namespace in serviceBusNamespaces: {
  name: 'servicebus-${namespace.name}'
  params: {
    namespace: namespace
    logAnalyticsWorkspaceId: functionApp.outputs.logAnalyticsWorkspaceId
  }
}]

module eventHubs 'modules/eventhubs.bicep' = [for namespace in eventHubNamespaces: {
  name: 'eventhubs-${namespace.name}'
  params: {
    namespace: namespace
    logAnalyticsWorkspaceId: functionApp.outputs.logAnalyticsWorkspaceId
  }
}]

module functionApp 'modules/functionapp.bicep' = {
  name: 'function-app'
  params: {
    name: functionAppName
    location: location
    replicationAppSettings: replicationAppSettings
    userAssignedIdentitySettings: userAssignedIdentitySettings
    userAssignedIdentityName: userAssignedIdentityName
    pythonVersion: pythonVersion
    keyVaultName: keyVaultName
    zoneRedundant: zoneRedundant
  }
}

module roles 'modules/roles.bicep' = [for (assignment, index) in roleAssignments: {
  name: 'role-${index}'
  params: {
    assignment: assignment
    principalId: functionApp.outputs.principalId
  }
  dependsOn: [
    serviceBus
    eventHubs
  ]
}]

module keyVault 'modules/keyvault.bicep' = if (enableKeyVault) {
  name: 'key-vault'
  params: {
    name: keyVaultName
    location: location
    principalId: functionApp.outputs.principalId
    logAnalyticsWorkspaceId: functionApp.outputs.logAnalyticsWorkspaceId
  }
}

module monitoringResources 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: {
    location: location
    insightsId: functionApp.outputs.insightsId
    monitoring: monitoring
    actionGroupId: actionGroupId
    namePrefix: functionAppName
  }
}

output functionAppName string = functionApp.outputs.name
output AZURE_FUNCTION_APP_NAME string = functionApp.outputs.name
